# Draws of the traced greta arrays, as a greta_mcmc_list (a coda mcmc.list).

# Column names as greta writes them: "mu" for a scalar, "theta[2,1]" otherwise.
trace_names <- function(name, dim) {
  if (prod(dim) == 1) return(name)
  grid <- as.matrix(expand.grid(lapply(dim, seq_len)))
  paste0(name, "[", apply(grid, 1, paste, collapse = ","), "]")
}

build_mcmc_list <- function(model, free, chains, thin, warmup, trace_batch_size, options,
                            status) {
  engine <- model_engine(model)
  ids <- vapply(model$traced, function(t) as.integer(t$ir), integer(1))
  names <- unlist(lapply(model$traced, function(t) trace_names(t$name, t$dim)))
  rows <- nrow(free)
  batch <- trace_batch_size * chains
  values <- matrix(0, rows, length(names))
  for (start in seq(1, rows, by = batch)) {
    idx <- start:min(rows, start + batch - 1)
    values[idx, ] <- ls_engine_values(engine, free[idx, , drop = FALSE], ids, options)
  }
  colnames(values) <- names
  chain_of_row <- rep_len(seq_len(chains), rows)
  per_chain <- lapply(seq_len(chains), function(chain) {
    coda::mcmc(values[chain_of_row == chain, , drop = FALSE], start = warmup + thin, thin = thin)
  })
  raw <- lapply(seq_len(chains), function(chain) {
    coda::mcmc(free[chain_of_row == chain, , drop = FALSE], start = warmup + thin, thin = thin)
  })
  draws <- coda::mcmc.list(per_chain)
  attr(draws, "model_info") <- list(raw_draws = coda::mcmc.list(raw), model = model,
                                    status = status)
  class(draws) <- c("greta_mcmc_list", class(draws))
  draws
}

#' @export
print.greta_mcmc_list <- function(x, ...) {
  info <- attr(x, "model_info")
  attr(x, "model_info") <- NULL
  class(x) <- "mcmc.list"
  print(x, ...)
  invisible(x)
}
