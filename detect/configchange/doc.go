// Package configchange is the config_change detector: it reviews every
// configuration change of the lookback (the config repository, changes.yaml,
// steps in php-fpm's own metrics) against the findings of the other
// detectors, and links a change to the incident only as far as the evidence
// goes (design.md, "config_change").
//
// A change is weighed three ways (RankChanges): its mechanism (the knob
// table, changeknobs.go: does the failure mode the setting leads to show
// among the findings?), its time (before the onset, and how close), and its
// arithmetic (changearithmetic.go: the queue wait B*S/W before and after
// against the health or client timeout, the pool size against the load's
// demand by Little's law, PHP's own time per request before and after a
// runtime change). A linked change is an enabler (or the trigger, when
// nothing else explains the onset), one that lowered the risk a mitigation,
// one the numbers clear ruled out; everything else is listed as reviewed.
//
// It registers with package detect like any detector (changeevidence.go):
// it declares the kinds it reads (Requires, from the knob table and its
// tests, and RequiresRoles for the triggers and mechanisms that date the
// onset), so it runs after them, and it speaks detect's types and catalog
// by their own names (detect.Finding). Importing it registers it; the pipeline
// (package analysis) and the scan do. It imports nothing later in the
// pipeline than detect: sources -> detect -> configchange -> rules/report.
package configchange
