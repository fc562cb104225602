package drivertest

import "strings"

// scrubMark is what driver.Scrub writes in a secret's place.
const scrubMark = "xxxxx"

// Shows reports whether err's text holds s outside the marks driver.Scrub
// leaves ("xxxxx" then " 1" would otherwise show the password "x 1"): what
// a driver's fuzz test of its connection strings asks of each error. Each
// piece between marks counts on its own: a password that spans a mark (its
// NUL byte where the mark was, say) is not shown.
func Shows(err error, s string) bool {
	if err == nil {
		return false
	}
	for _, piece := range strings.Split(err.Error(), scrubMark) {
		if strings.Contains(piece, s) {
			return true
		}
	}
	return false
}

// PasswordForms is the password as written and as each unescape reads it
// (the forms a connection string may carry it in), those at least three
// bytes long: shorter ones show in an error's text by chance.
func PasswordForms(p string, unescapes ...func(string) (string, error)) []string {
	forms := []string{p}
	for _, unescape := range unescapes {
		if u, err := unescape(p); err == nil {
			forms = append(forms, u)
		}
	}
	var out []string
	for _, s := range forms {
		if len(s) >= 3 {
			out = append(out, s)
		}
	}
	return out
}
