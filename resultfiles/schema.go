package resultfiles

import "embed"

// Schemas holds the JSON Schemas (draft 2020-12) that the files of this package follow:
// schema/stage.schema.json (StageReport) and schema/report.schema.json (Report). A change to the
// types that changes the files changes these with them.
//
//go:embed schema/*.schema.json
var Schemas embed.FS
