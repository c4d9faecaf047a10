package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// packages lists the module's packages by directory ("cli", "engine/h1client"; "" is the root):
// every directory below the module that holds a non-test Go file, as `go list ./...` finds them
// (testdata and hidden directories are not packages).
func packages(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			dir := filepath.ToSlash(filepath.Dir(path))
			if dir == "." {
				dir = ""
			}
			seen[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for dir := range seen {
		out = append(out, dir)
	}
	slices.Sort(out)
	return out
}

// tablePackages is the first column's `name`s of the Markdown table under heading in file.
func tablePackages(t *testing.T, file, heading string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s: no %q heading", file, heading)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9/]+)`")
	var out []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		if m := row.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return out
}

// TestPackageTablesMatchTheModule: the package lists of README.md and docs/architecture.md name
// exactly the module's packages (bench, whose files are all tests, and the root aside), so a
// newcomer reading them finds every package and no package that is gone.
func TestPackageTablesMatchTheModule(t *testing.T) {
	var want []string
	for _, p := range packages(t) {
		if p != "" {
			want = append(want, p)
		}
	}
	for _, doc := range []struct{ file, heading string }{{"README.md", "## Packages"}, {"docs/architecture.md", "## Packages"}} {
		got := slices.DeleteFunc(tablePackages(t, doc.file, doc.heading), func(p string) bool { return p == "bench" })
		if !slices.Equal(got, want) {
			t.Errorf("%s lists packages\n  %v\nbut the module has\n  %v", doc.file, got, want)
		}
	}
}

// TestRootHoldsOnlyMain: the root package is the entry point alone; the commands live in cli.
func TestRootHoldsOnlyMain(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if f != "main.go" && f != "main_test.go" {
			t.Errorf("%s is in the root package: commands and their logic belong in cli/ or the package that does the work", f)
		}
	}
}
