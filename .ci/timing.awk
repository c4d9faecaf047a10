# Prints, one a line, the top-level tests of a `go test -v` log that hold a timing claim: those that
# logged "not judged: … (a timing claim; …)" (timingtier.Judge) or skipped as "a timing claim only"
# (timingtier.Only) while the tier was off. .ci/run runs exactly these again with the tier on, so
# the tier's list is never kept by hand and a new timing check joins it by calling timingtier.
/^=== (RUN|CONT|NAME|PAUSE) / { name = $3; sub(/\/.*/, "", name); next }
/^[ \t]*--- / { next }
/not judged: .*\(a timing claim;|a timing claim only: / { if (name != "" && !(name in seen)) { seen[name] = 1; print name } }
