// Package replayreport is what a replay measured, as its report states it:
// the taxonomy of outcomes (Outcome, Counts), who sent a request (Class), and
// the report (aftermath.replay/v1) with its per-class shares and the
// comparison with the rule's backtest. Package replay measures and fills it;
// report/replayview renders it for people. It is apart from replay, whose
// engine and rule scaling link Caddy through package rules, so that the
// renderer links only what it shows.
package replayreport
