// Package replayview renders a replay's measurement (a
// rules/replay/replayreport.Report) for people: replay.md (Markdown) and
// replay.html (one self-contained page in the postmortem's style, with its
// charts drawn by report/timechart). rules/replay measures and writes
// replay.json; what a person reads is rendered here, beside the postmortem's
// rendering, so that the rules stage never imports the report stage. It reads
// the report's types alone, so it links neither the replay's engine nor Caddy.
package replayview
