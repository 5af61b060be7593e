// Package request is the vocabulary of one request: what a single access-log
// line is, said independently of any detector. A request's target has a path
// class (cost and cacheability, from the URL's shape), a route template (the
// target with what varies per page taken out) and a tool label (the
// granularity a rate limit would match); its user agent has a family; its
// address counts as a client (an IPv4 address, an IPv6 /64) inside a network
// a per-prefix limit groups (Prefix); its headers give the fingerprint
// (ClusterKey) that gathers requests "from the same kind of client"; and it
// may be the site calling itself (SelfCall).
//
// Each is computed from the request alone, by its shape, never from a list of
// names seen in one incident. Package detect aggregates and judges requests
// in these terms, and the scan (detect/scan), the rules (rules) and the
// report say them the same way because they read them from here. The
// package needs nothing of detect: it sits below it in the pipeline
// (analysis/stages_test.go).
package request
