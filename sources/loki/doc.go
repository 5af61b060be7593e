// Package loki pulls evidence out of Grafana Loki through its documented HTTP API
// (/loki/api/v1/query_range, /query, /labels, /series, /index/stats). It is a small client of
// its own on net/http: grafana/loki is AGPL and is not imported.
//
// # Two phases
//
// Aggregates run inside Loki: MinuteCounts asks for count_over_time per stream
// per minute, so its cost does not grow with log volume. Raw lines are pulled
// only where needed: Pull for a whole window, PullMinutes for flagged minutes.
// Every raw pull is cross-checked against count_over_time for the same streams
// and sub-ranges, so a truncated, failed or silently short answer is reported
// as partial (Result.Notes, Result.Complete) instead of passing as complete.
//
// # Paging: one stream at a time
//
// Loki returns at most `limit` lines per call, so a window is paged: the next
// call starts at the last timestamp seen. logcli pages all streams of a query
// at once and restarts from the latest timestamp of the page; lines of a busier
// stream older than that timestamp but not in the page are lost
// (grafana/loki#17270). This package pages each stream on its own: /series
// lists the streams of the selector (Pull: the count query does), and each is
// queried with a selector that matches it alone (its labels as equality
// matchers, plus name="" for the label names of its siblings, plus the caller's
// matchers). Within one stream a forward page is the oldest `limit` lines, so
// everything before the page's last timestamp T is complete; the next page
// starts AT T (start is inclusive) and skips the lines at T already delivered,
// counted as a multiset of line texts. No line is lost or repeated at a page
// edge, even inside a run of lines that share one nanosecond. Only a run longer
// than the limit cannot be paged; it is reported as truncated.
//
// Why per stream rather than "re-query the boundary nanosecond across all
// streams": it does not depend on the server cutting a multi-stream answer at a
// globally consistent point, which is exactly the assumption #17270 shows to
// fail in practice; it matches the unit of the completeness check (lines per
// stream per sub-range); and it yields time order per stream for free. It costs
// one query per stream per sub-range, which is cheap for access logs (a few
// streams); Pull skips streams that count_over_time says are empty.
//
// # Sub-ranges, ordering, cancellation
//
// Windows are cut at multiples of Config.SplitBy and fetched by Config.Parallel
// workers. Delivery is ordered: the sink is never called concurrently, and the
// lines of a stream arrive in time order across the whole window; later
// sub-ranges are fetched ahead but at most a few pages each are buffered, so
// memory stays flat however large the window. Cancelling the context stops all
// requests at once; lines already delivered stay delivered and the Result marks
// the unfinished sub-ranges incomplete.
//
// # Errors and retries
//
// 429, 5xx, timeouts and broken connections are retried under httpretry's
// policy: exponential backoff with full jitter, honouring Retry-After (seconds
// or HTTP date), within a time budget per request. A 400
// is not retried: errors carry Loki's own text and the query. A 400 "max
// entries limit per query exceeded" lowers the per-call limit to the server's
// max_entries_limit_per_query and the page is asked again; the change is
// reported. Loki's other query limits are learned from its refusals, in its
// own words (LimitsLearned): max_query_length cuts every later request to
// the limit; max_query_series splits a sum by labels by the values of its
// grouping (seriessplit.go: label filters keeping exact sets of a stream
// label's values as the index lists them, else ranges of the values,
// halved until each answer fits, the parts' answers joined) and any other
// metric query in time;
// max_query_bytes_read and max_querier_bytes_read split in time down to
// one step, and then a sum over one selector by label shards (shards.go:
// groups of its streams by a label's values, the groups' answers summed),
// down to one stream; what one stream cannot give in one step is the
// error, naming the stream. Credentials travel only in headers and never appear in errors,
// notes, Config.String or bundle records.
package loki
