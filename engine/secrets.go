package engine

import (
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/plload/plload/workload"
)

// Secrets are the API key and the values of secret headers (workload.IsSecretHeader). Every text a
// server sent, or an error quoting it, is masked before it reaches a record, a log or the terminal:
// servers and proxies echo keys in error bodies, malformed chunks and redirect targets.

// minSecret is the shortest secret masked: shorter ones would mask ordinary words and numbers.
const minSecret = 4

// addSecret adds v to secrets, with its URL-encoded form when that differs (a key echoed in a
// Location or a query), unless it is too short to mask.
func addSecret(secrets []string, v string) []string {
	if len(v) < minSecret {
		return secrets
	}
	secrets = append(secrets, v)
	if q := url.QueryEscape(v); q != v {
		secrets = append(secrets, q)
	}
	return secrets
}

var headerEnvRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// headerSecrets adds a secret header's value (template expanded), the value without its auth
// scheme ("Bearer sk-…" gives "sk-…"), and the value of every ${VAR} in the template: a server
// that rejects a key echoes the key alone, never the header line.
func headerSecrets(secrets []string, template, value string, getenv func(string) string) []string {
	secrets = addSecret(secrets, value)
	if _, credential, ok := strings.Cut(value, " "); ok {
		secrets = addSecret(secrets, strings.TrimSpace(credential))
	}
	for _, m := range headerEnvRef.FindAllStringSubmatch(template, -1) {
		secrets = addSecret(secrets, getenv(m[1]))
	}
	return secrets
}

// scrub masks every secret in text that goes into a record, a log or the terminal (scrubCut,
// without a cut of its own).
func (s *stageRun) scrub(text string) string { return scrubCut(text, -1, s.secrets) }

// scrubCut masks s's secrets in text and cuts it to limit bytes (scrubCut the function).
func (s *stageRun) scrubCut(text string, limit int) string { return scrubCut(text, limit, s.secrets) }

// longestSecret is how many bytes past a read limit are read too, so that a secret the limit would
// split is read whole and masked whole before the text is cut.
func (s *stageRun) longestSecret() int {
	n := 0
	for _, secret := range s.secrets {
		n = max(n, len(secret))
	}
	return n
}

// scrubCut is the one way server text is cut: it masks every secret in text, then cuts it to at
// most limit bytes (limit < 0: no cut) on a character boundary, then masks what is left at the end
// that is the start of a secret, minSecret bytes or more of it. Masking before the cut keeps a
// secret that straddles the cut from leaving its first part behind (a server that echoes the key
// in an error body); the check at the end covers text that was cut before it got here (a body read
// up to a limit, a message cut by another package).
func scrubCut(text string, limit int, secrets []string) string {
	text = maskSecrets(text, secrets)
	if limit >= 0 && len(text) > limit {
		// Back to the start of a character, at most 3 bytes: text that is not UTF-8 is cut where it is.
		cut := limit
		for cut > 0 && cut > limit-(utf8.UTFMax-1) && !utf8.RuneStart(text[cut]) {
			cut--
		}
		if !utf8.RuneStart(text[cut]) {
			cut = limit
		}
		text = text[:cut]
	}
	longest := 0
	for _, secret := range secrets {
		for n := min(len(secret)-1, len(text)); n >= minSecret && n > longest; n-- {
			if strings.HasSuffix(text, secret[:n]) {
				longest = n
				break
			}
		}
	}
	if longest > 0 {
		return text[:len(text)-longest] + workload.Masked
	}
	return text
}

// maskSecrets replaces every stretch of text covered by an occurrence of a secret with one
// workload.Masked. Occurrences are found on the original text, so two secrets that overlap in it
// (one ending where the other begins) are masked together, not one after the other with the
// second's tail left behind.
func maskSecrets(text string, secrets []string) string {
	var covered []bool
	for _, secret := range secrets {
		if len(secret) < minSecret {
			continue
		}
		for from := 0; ; {
			i := strings.Index(text[from:], secret)
			if i < 0 {
				break
			}
			if covered == nil {
				covered = make([]bool, len(text))
			}
			for j := from + i; j < from+i+len(secret); j++ {
				covered[j] = true
			}
			from += i + 1
		}
	}
	if covered == nil {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		switch {
		case !covered[i]:
			b.WriteByte(text[i])
		case i == 0 || !covered[i-1]:
			b.WriteString(workload.Masked)
		}
	}
	return b.String()
}
