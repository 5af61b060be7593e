package report

import _ "embed"

// SchemaJSON is the JSON Schema (draft 2020-12) of report.json, kept in
// report/schema/report.v1.schema.json: consumers can validate against it, and
// this package's tests validate every rendering against it.
//
//go:embed schema/report.v1.schema.json
var SchemaJSON []byte
