// Package replayview renders a replay's measurement (rules/replay's Report)
// for people: replay.md (Markdown) and replay.html (one self-contained page
// in the postmortem's style, with its charts drawn by report/timechart).
// rules/replay measures and writes replay.json; what a person reads is
// rendered here, beside the postmortem's rendering, so that the rules stage
// never imports the report stage.
package replayview
