package ccompat_test

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestReadmeCurl runs the curl sequence of the README's "Confluent-compatible
// registry API" section in-process, request for request, and compares each
// answer with the "# => " line under it: the README cannot drift from what
// the handler does.
func TestReadmeCurl(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## Confluent-compatible registry API")
	if !ok {
		t.Fatal("README has no Confluent-compatible registry API section")
	}
	_, section, _ = strings.Cut(section, "```sh\n")
	section, _, _ = strings.Cut(section, "```")
	type step struct{ cmd, want string }
	var steps []step
	for _, line := range strings.Split(section, "\n") {
		switch {
		case strings.HasPrefix(line, "curl "):
			steps = append(steps, step{cmd: line})
		case strings.HasPrefix(line, "# => "):
			if len(steps) == 0 || steps[len(steps)-1].want != "" {
				t.Fatalf("an answer without its curl: %q", line)
			}
			steps[len(steps)-1].want = strings.TrimPrefix(line, "# => ")
		}
	}
	if len(steps) < 14 {
		t.Fatalf("found %d curl steps in the README, want the whole sequence", len(steps))
	}
	srv := serve(t, backends(t)[0].open(t), nil)
	for _, s := range steps {
		method, headers, body, url := parseCurl(t, s.cmd)
		req, err := http.NewRequestWithContext(ctx(t), method, strings.Replace(url, "http://localhost:8081", srv.URL, 1), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		if body != "" && req.Header.Get("Content-Type") == "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded") // what curl --data sends
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if s.want == "" || !sameJSON(t, got, []byte(s.want)) {
			t.Errorf("%s\n got: %s\nwant: %s", s.cmd, got, s.want)
		}
	}
}

// parseCurl reads the curl lines of the README: -X, -H, --data and a URL,
// with shell quoting (single quotes literal, double quotes with \ escapes).
func parseCurl(t *testing.T, line string) (method string, headers map[string]string, body, url string) {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch ch := line[i]; {
		case ch == ' ':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case ch == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				t.Fatalf("unclosed ' in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i, inWord = i+1+j, true
		case ch == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) {
					i++
				}
				cur.WriteByte(line[i])
			}
			inWord = true
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	method, headers = "GET", map[string]string{}
	for i := 1; i < len(words); i++ {
		switch words[i] {
		case "-X":
			i++
			method = words[i]
		case "-H":
			i++
			k, v, _ := strings.Cut(words[i], ":")
			headers[k] = strings.TrimSpace(v)
		case "--data":
			i++
			body = words[i]
			if method == "GET" {
				method = "POST"
			}
		default:
			url = words[i]
		}
	}
	return method, headers, body, url
}
