# plot() of a model: its graph (nodes, edges, layers) and the drawing.

test_that("plot() of a model draws its graph and returns the nodes and edges", {
  x <- matrix(c(0.1, -0.4, 1.2, 0.3, -0.8, 0.5), 3)
  y <- c(0.3, -0.2, 1.1)
  b <- normal(0, 1, dim = 2)
  sigma <- exponential(1)
  distribution(y) <- normal(x %*% b, sigma)
  m <- model(b, sigma)
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  g <- plot(m)
  expect_named(g, c("nodes", "edges"))
  nodes <- g$nodes
  # b, sigma; their priors' constants 0, 1, 1; x, y; matmul; three normals/exponential
  expect_equal(sort(nodes$label[nodes$type == "variable"]), c("b", "sigma"))
  expect_equal(sort(nodes$label[nodes$type == "distribution"]),
               c("exponential", "normal", "normal"))
  expect_equal(nodes$label[nodes$type == "operation"], "matmul")
  expect_setequal(nodes$label[nodes$type == "data"], c("0", "1", "data (3 x 2)", "data (3 x 1)"))
  # every edge goes down, and each distribution has one dashed edge to its target
  e <- g$edges
  expect_true(all(nodes$layer[match(e$to, nodes$id)] > nodes$layer[match(e$from, nodes$id)]))
  targets <- e$to[e$kind == "distribution"]
  expect_setequal(nodes$label[match(targets, nodes$id)], c("b", "sigma", "data (3 x 1)"))
  expect_equal(sum(e$kind == "distribution"), sum(nodes$type == "distribution"))
  # the likelihood's inputs: the matmul and sigma
  lik <- nodes$id[nodes$type == "distribution" & nodes$layer == max(nodes$layer[nodes$type == "distribution"])]
  expect_setequal(nodes$label[match(e$from[e$to == lik & e$kind == "input"], nodes$id)],
                  c("matmul", "sigma"))
  expect_true(all(nodes$x > 0 & nodes$x < 1 & nodes$y > 0 & nodes$y < 1))
  # the layout is made by plot(); model() keeps only the nodes and edges
  expect_named(m$graph$nodes, c("id", "type", "label"))
})

test_that("plot() shows a model as written (a multivariate distribution as one node), also once saved", {
  y <- matrix(c(0.2, -0.1, 0.4, 0.3), 2)
  mu <- normal(0, 1, dim = c(1, 2))
  distribution(y) <- multivariate_normal(mu, diag(2), n_realisations = 2)
  m <- model(mu)
  file <- tempfile(fileext = ".rds")
  saveRDS(m, file)
  m2 <- readRDS(file)
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  g <- plot(m2)
  expect_true("multivariate_normal" %in% g$nodes$label)
  expect_false("log_jacobian" %in% g$nodes$label)
  m2$graph <- NULL
  expect_error(plot(m2), "no graph to plot.*make it again with model\\(\\)")
})

test_that("plot() refuses a model too large to draw, which model() does not record", {
  x <- variable()
  s <- x
  for (i in 1:400) s <- s + x * i
  y <- as_data(1)
  distribution(y) <- normal(s, 1)
  m <- model(x)
  expect_null(m$graph$nodes)
  expect_error(plot(m), "this model has [0-9]+ nodes, too many to draw readably.*up to 1000 nodes")
})
