# What a model's data take in the engine, said before a large build and
# checked against the memory free, so that a model too large for the machine
# is refused with a message rather than killed by the operating system
# (issue 50).

# Models whose engine holds less than this are built without a word.
memory_message_bytes <- 2^30

# The memory this machine can give a process now (bytes): Linux's
# MemAvailable, the free memory and what the page cache can give back. NA
# where it is not known (other systems), and then nothing is refused.
memory_available <- function() {
  # (the option is for tests: a machine with that much free)
  given <- getOption("lockstep.memory_available")
  if (!is.null(given)) return(as.numeric(given))
  info <- tryCatch(readLines("/proc/meminfo", warn = FALSE), error = function(e) character())
  line <- grep("^MemAvailable:", info, value = TRUE)
  if (length(line) != 1L) return(NA_real_)
  as.numeric(sub("^MemAvailable:[[:space:]]*([0-9]+) kB.*$", "\\1", line)) * 1024
}

# The bytes the engine's program copies from the lowered IR (every data
# value and index entry as 8 bytes), before it is made.
ir_data_bytes <- function(ir) {
  # (double values are R's own, which the engine borrows: src/rcpp_engine.cpp's data_values())
  sum(vapply(ir$nodes, function(n) 8 * ((if (is.double(n$values)) 0 else length(n$values)) +
                                          length(n$index)), numeric(1)))
}

format_bytes <- function(bytes) {
  if (bytes >= 2^30) sprintf("%.1f GB", bytes / 2^30) else sprintf("%.0f MB", bytes / 2^20)
}

# Refuses (an R error naming the sizes) when `needed` bytes exceed what the
# machine has free; says what a large build will hold. `rows`: the most rows
# of one likelihood (for bytes a row), NA when not known yet.
check_memory <- function(needed, what, rows = NA_real_, available = memory_available()) {
  per_row <- if (!is.na(rows) && rows > 0) {
    sprintf(" (%s rows at %.0f bytes a row)", format(rows, big.mark = ",", scientific = FALSE),
            needed / rows)
  } else {
    ""
  }
  if (!is.na(available) && needed > available) {
    stop("model(): ", what, " needs about ", format_bytes(needed), per_row,
         ", but this machine has ", format_bytes(available), " of memory free. ",
         "Free memory (rm() large objects, then gc()), use precision = \"single\", ",
         "or fit the model across processes or GPUs (see ?mpi_start, ?gpu_only)",
         call. = FALSE)
  }
  if (needed >= memory_message_bytes) {
    message("model(): ", what, " holds about ", format_bytes(needed), per_row,
            if (!is.na(available)) paste0("; ", format_bytes(available), " free"))
  }
  invisible(needed)
}

# model()'s checks: the engine's copy of the data before it is made, then
# what its first executor adds (its stages' copies of the rows in their
# order), which the engine computes from the plan.
check_engine_memory <- function(ir) {
  check_memory(ir_data_bytes(ir), "the engine's copy of the data")
}
check_executor_memory <- function(pointer) {
  bytes <- ls_engine_memory(pointer)
  if (bytes[["stages"]] > 0) {
    check_memory(bytes[["stages"]], "the fit's copy of the rows (in the order it runs them)",
                 bytes[["rows"]])
  }
}
