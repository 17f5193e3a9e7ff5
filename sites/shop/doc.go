// Package shop is WebServ's bundled e-commerce site: a storefront (the
// "shopping" role) and its admin panel (the "cms" role) in one static
// binary, with all state in one SQLite database under a data directory.
//
// It exists so that every machine has a realistic site to train and
// benchmark web agents on, with the hard cases of modern shops occurring
// naturally: as-you-type search suggestions fetched from an API, add to
// cart through fetch updating a mini-cart without a reload, hover-only
// menus and tooltips, multi-step checkout with validation, and admin
// report widgets loaded asynchronously.
//
// A data directory is made by Generate from a seed, so the catalog (and the
// bundled tasks written against it) are the same on every machine:
//
//	err := shop.Generate(ctx, dir, shop.GenerateOptions{Seed: 1, Scale: shop.ScaleSmall})
//	srv, err := shop.Open(dir, shop.Options{})
//	http.ListenAndServe("127.0.0.1:8080", srv)
//
// Besides its pages the site answers:
//   - /healthz: readiness;
//   - /rest/...: the subset of Magento's REST API that WebArena's evaluator
//     helpers call (admin token, orders, product reviews);
//   - POST /__webserv/query: read-only SQL for the native state evaluator,
//     only with the X-Webserv-Eval header equal to the EVAL_TOKEN the site
//     was started with (agents in the browser never have it).
//
// The command `webserv shop serve --data DIR --port N` runs it, and
// `webserv shop generate --data DIR --seed 1 --scale small` makes a data
// directory.
package shop
