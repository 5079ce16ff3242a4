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
  expect_equal(nodes$label[nodes$type == "operation"], "matrix multiply")  # greta's name
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
                  c("matrix multiply", "sigma"))
  # ... labelled with the parameters they are
  into_lik <- e[e$to == lik & e$kind == "input", ]
  expect_equal(into_lik$label[match(nodes$id[nodes$label == "sigma"], into_lik$from)], "sd")
  expect_equal(into_lik$label[match(nodes$id[nodes$label == "matrix multiply"], into_lik$from)],
               "mean")
  expect_true(all(e$label[e$kind == "distribution"] == ""))
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

test_that("plot() names nodes as the user did and operations as greta does (issue 38)", {
  # the seed model's shape, small: a non-centred random intercept and slopes
  set.seed(385)
  g <- rep(1:5, each = 4)
  X <- matrix(rnorm(40), 20)
  yb <- rbinom(20, 1, 0.5)
  alpha <- normal(0, 1.5)
  sigma_alpha <- normal(0, 1, truncation = c(0, Inf))
  z_alpha <- normal(0, 1, dim = 5)
  alpha_g <- sigma_alpha * z_alpha
  Xd <- as_data(X)
  beta <- normal(0, 1, dim = 2)
  eta <- alpha + alpha_g[g] + Xd %*% beta
  distribution(yb) <- bernoulli(ilogit(eta))
  m <- model(alpha, beta)
  grDevices::pdf(NULL)
  on.exit(grDevices::dev.off())
  nodes <- plot(m)$nodes
  # greta arrays named where model() was called keep their names, traced or not
  expect_true(all(c("alpha", "beta", "sigma_alpha", "z_alpha", "alpha_g", "Xd", "eta") %in%
                    nodes$label))
  expect_false("variable" %in% nodes$label)
  # unnamed operations by greta's names, not the engine's
  ops <- nodes$label[nodes$type == "operation"]
  expect_true(all(c("extract", "matrix multiply", "add") %in% ops))
  expect_false(any(c("mul", "gather", "gather_rows", "matmul") %in% ops))
  expect_equal(lockstep:::greta_operation_name("mul"), "multiply")
  expect_equal(lockstep:::greta_operation_name("exp"), "exp")
  expect_true("bernoulli" %in% nodes$label[nodes$type == "distribution"])
})
