// Package detect turns evidence (requests, metric series, changes) into findings:
// one named check per failure signature of design.md ("Detectors"). Every check
// reports an outcome: a finding, "not interesting" with the reason, or "could not
// run" with the evidence it lacked.
//
// A detector registers its Spec from init (registry.go); one may live in its
// own package and register from there, as the config-change analysis does
// (package configchange, which reads detect's helpers in shared.go).
//
// What one request is (path class, route template, tool label, user-agent
// family, client, fingerprint) is said by package detect/request, below
// this one: detect aggregates requests in those terms (Traffic) and judges
// them; the scan and the rules read the same vocabulary from there.
package detect
