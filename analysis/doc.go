// Package analysis is the pipeline's one home: it composes the stages
// sources -> detect -> (report, rules) for every command that analyzes
// evidence, so that the CLI, the bench, a scheduled scan and a replay run the
// same steps in the same order and none of them composes its own.
//
// Run does the whole of it: it loads the inputs (ingest), runs every detector
// (detect), builds the postmortem (report) and proposes and backtests the
// rate-limit rules (rules). A caller that needs only part calls the stage
// functions Run is made of, never the stages' packages in its own order:
//
//   - Load reads the evidence and the detectors' view of it (a scan, which
//     reads its access logs itself, loads the rest through it: LoadScans);
//   - Detect loads and runs every detector (the rules command, a replay);
//   - SecondPasses completes a pushed-down live bundle where the detectors'
//     edges lie next to minutes that were only counted, and returns the last
//     pass's detection;
//   - Finish builds the report and the rules from a detection;
//   - Scan runs the detectors on a scan's window, between the scan's readying
//     of it and its judging;
//   - ProposeForScan and PrepareReplay propose rules over a scan's window or
//     a replay's range.
//
// analysis stands above every stage and below the commands: it imports
// sources, detect, report and rules, and nothing but cmd/ imports it.
package analysis
