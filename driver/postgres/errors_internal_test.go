package postgres

import (
	"slices"
	"testing"
)

// connSecrets finds the password in every shape of connection string, also
// in ones pgx cannot parse, so that no error text shows it.
func TestConnSecrets(t *testing.T) {
	for _, tc := range []struct {
		conn string
		want []string
	}{
		{"postgres://app:pw1@host/db", []string{"pw1"}},
		{"postgresql://app:p%40ss@host/db", []string{"p%40ss", "p@ss"}},
		{"postgres://app:pa/ss@host:5432/db", []string{"pa/ss"}},
		{"postgres://app:pa@ss@host/db", []string{"pa@ss", "pa"}},
		{"postgres://:%:@00@0", []string{"%:@00", "%:", "@00"}}, // pgx redacts "%:" only (found by FuzzOpenURL)
		{"postgres://app:pw2@%zz/db", []string{"pw2"}},
		{"postgres://app:pw3%zz@host/db", []string{"pw3%zz"}},
		{"postgres://app@host/db?sslmode=disable&password=pw4", []string{"pw4"}},
		{"postgres://app@host/db?sslpassword=pw5", []string{"pw5"}},
		{"host=h password=pw6 dbname=db", []string{"pw6"}},
		{"host=h password = 'pw 7\\'x' dbname=db", []string{"pw 7'x"}},
		{"password=pw8", []string{"pw8"}},
		{"host=h password='pw9", []string{"pw9"}},
		{"postgres://app@host/db", nil},
	} {
		got := connSecrets(tc.conn)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("connSecrets(%q) = %q; want it to contain %q", tc.conn, got, w)
			}
		}
		if tc.want == nil && len(got) > 0 {
			t.Errorf("connSecrets(%q) = %q; want none", tc.conn, got)
		}
	}
}
