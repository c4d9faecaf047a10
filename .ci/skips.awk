# Prints each skipped test with the first lines of its reason (go test -v prints the reason before
# the "--- SKIP" line), and last a line "BUSY n": the skips whose reason says the machine was busy.
/^=== (RUN|CONT|PAUSE|NAME)/ { n = 0; busy = 0; next }
/^[ \t]*--- SKIP/ {
  print "   " $0
  for (i = 1; i <= n && i <= 3; i++) print "         " msg[i]
  if (busy) nb++
  n = 0; busy = 0; next
}
/^[ \t]*--- (PASS|FAIL)/ { n = 0; busy = 0; next }
{ if (n < 50) msg[++n] = $0; if ($0 ~ /strained|too busy/) busy = 1 }
END { print "BUSY " nb + 0 }
