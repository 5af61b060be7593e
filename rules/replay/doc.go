// Package replay proves a rule a second way: it sends the recorded requests
// of an incident, open-loop and at their recorded instants (optionally
// compressed in time), at a staging copy of the site, and classifies what
// comes back. The backtest (package rules) replays the same requests through
// a model of caddy-ratelimit; this replay shares none of its assumptions
// about the server, so when the two agree the rule's numbers stand on two
// legs, and when they disagree the report names where.
//
// The pipeline is:
//
//   - plan.go picks the window's requests, classes them by the crawler
//     fingerprints of the crawler_burst findings (detect's ClusterKey), and
//     orders them by arrival (log time minus duration);
//   - addresses.go gives each recorded client its own loopback source address
//     (per-prefix structure kept), or names it in a forwarding header;
//   - engine.go fires every request at its instant on a goroutine of its own,
//     whatever is still in flight (open loop: the schedule is computed from
//     the start, never from the previous send), and measures its own lag;
//   - outcome.go classifies each answer (in time by status, late, 429,
//     502/503/504, timeout, refused, reset, EOF), in the taxonomy of package
//     replayreport (Outcome, Counts);
//   - scale.go divides a rule's windows by the speed-up, since a window does
//     not compress with the traffic;
//   - report.go sets the replay beside the rule's backtest in a
//     replayreport.Report, written as JSON (aftermath.replay/v1); package
//     report/replayview renders it for people (Markdown, and HTML with the
//     postmortem's charts) from replayreport alone, without linking this
//     package's engine or Caddy.
//
// The rule proposed for the range and the plan are prepared by the pipeline
// (analysis.PrepareReplay).
package replay
