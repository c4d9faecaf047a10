package resultstest

import (
	"bytes"
	"testing"

	// A full draft 2020-12 validator that also checks the schemas against the metaschema; pure Go,
	// linked only into tests, the one importer of this package (its one requirement,
	// golang.org/x/text, is already in go.sum).
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/plload/plload/resultfiles"
)

// schemaBase is the $id under which the schema files name each other (they keep the address they
// were published at).
const schemaBase = "https://github.com/plload/plload/resultfiles/schema/"

// Schemas compiles resultfiles.Schemas (nothing fetched) into validators of report.json and stage.json.
func Schemas(t testing.TB) (report, stage *jsonschema.Schema) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for _, name := range []string{"report.schema.json", "stage.schema.json"} {
		data, err := resultfiles.Schemas.ReadFile("schema/" + name)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("schema/%s: %v", name, err)
		}
		if err := c.AddResource(schemaBase+name, doc); err != nil {
			t.Fatalf("schema/%s: %v", name, err)
		}
	}
	report, err := c.Compile(schemaBase + "report.schema.json")
	if err != nil {
		t.Fatalf("schema/report.schema.json: %v", err)
	}
	stage, err = c.Compile(schemaBase + "stage.schema.json")
	if err != nil {
		t.Fatalf("schema/stage.schema.json: %v", err)
	}
	return report, stage
}

// Validate checks data, the JSON of what, against sch; it fails the test when data is not JSON.
func Validate(t testing.TB, sch *jsonschema.Schema, what string, data []byte) error {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s is not JSON: %v", what, err)
	}
	return sch.Validate(doc)
}
