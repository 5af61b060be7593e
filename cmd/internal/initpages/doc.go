// Package initpages gives back the pages of the executable that only its
// start-up used.
//
// aftermath links Caddy (its adapter validates the rules it writes), the AWS
// SDK, Prometheus' promql and cobra: some 1,300 packages whose initialisers
// run before main, spread over 28 MB of code and 34 MB of read-only data.
// The kernel maps the file's pages around each page touched (fault-around),
// so when main starts the process already holds about 48 MiB of the binary
// resident, most of which nothing touches again. Measured at 1 core on the
// bench's 256 MB log (cmd/analyzebench, ANALYZEBENCH_STAGES): analyze peaked
// at 97 MiB, 50 MiB of it the binary's pages (RssFile) and 48 MiB the heap
// and the runtime (RssAnon).
//
// Release unmaps the executable's read-only mappings from the process
// (madvise MADV_DONTNEED). The pages stay in the page cache and fault back in
// when code or data on them is used again, so what stays resident is what
// the run uses: 17 MiB of the binary by the end of that analysis, whose peak
// fell to 68 MiB at the same CPU time. Only mappings that hold nothing but
// the file's pages are advised: writable ones (.data, .bss) never, nor a
// read-only one with a page written to it (a position-independent build's
// relocated data): dropping a private page that was written would lose what
// was written.
package initpages
