package cluster

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/plload/plload/workload"
)

// TestMergedModesAreARunsModes: merged/ and everything in it have the modes a run's results get
// (directories 0755, files 0644, less the umask), so other users and the cluster's collectors can
// read them; the merged directory is built beside --out and renamed, and a temporary directory's
// 0700 would survive the rename.
func TestMergedModesAreARunsModes(t *testing.T) {
	base := t.TempDir()
	sc, issues := workload.Parse("bench.yaml", []byte(benchScenario), workload.LoadOptions{})
	if err := issues.Err(); err != nil {
		t.Fatal(err)
	}
	resolved, err := sc.ResolvedYAML()
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for i := range 2 {
		d := filepath.Join(base, fmt.Sprint(i))
		writeBenchShard(t, d, sc, resolved, i, 2, 20)
		dirs = append(dirs, d)
	}
	// What a run's directories and files get here, under this process's umask.
	refDir, refFile := filepath.Join(base, "ref"), filepath.Join(base, "ref.json")
	if err := os.Mkdir(refDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(refFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantDir, wantFile := modeOf(t, refDir), modeOf(t, refFile)

	out := filepath.Join(base, "merged")
	if _, err := Merge(MergeOptions{Dirs: dirs, Out: out, Tool: "test"}); err != nil {
		t.Fatal(err)
	}
	seen := 0
	err = filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := wantFile
		if d.IsDir() {
			want = wantDir
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s: mode %04o, want %04o (a run's)", path, got, want)
		}
		seen++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 5 {
		t.Errorf("merged/ holds %d entries, the directory included; want its report, manifest and stage", seen)
	}
}

func modeOf(t *testing.T, path string) fs.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}
