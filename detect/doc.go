// Package detect turns evidence (requests, metric series, changes) into findings:
// one named check per failure signature of design.md ("Detectors"). Every check
// reports an outcome: a finding, "not interesting" with the reason, or "could not
// run" with the evidence it lacked.
package detect
