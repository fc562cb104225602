package drivertest_test

import (
	"errors"
	"net/url"
	"slices"
	"testing"

	"github.com/sqlstreams/sqlstreams/core/driver/drivertest"
)

func TestShows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		s    string
		want bool
	}{
		{nil, "secret", false},
		{errors.New("dial u:secret@h"), "secret", true},
		{errors.New("dial u:xxxxx@h"), "secret", false},
		{errors.New("dial u:xxxxx 1@h"), "x 1", false}, // only across the mark
		{errors.New("dial u:xxxxx@h x 1"), "x 1", true},
	} {
		if got := drivertest.Shows(tc.err, tc.s); got != tc.want {
			t.Errorf("Shows(%v, %q) = %v, want %v", tc.err, tc.s, got, tc.want)
		}
	}
}

func TestPasswordForms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    string
		want []string
	}{
		{"sec%2Fret", []string{"sec%2Fret", "sec/ret", "sec/ret"}},
		{"a+b%zz", []string{"a+b%zz"}}, // neither unescapes
		{"a%2F", []string{"a%2F"}},     // "a/" is too short
		{"ab", nil},
	} {
		if got := drivertest.PasswordForms(tc.p, url.PathUnescape, url.QueryUnescape); !slices.Equal(got, tc.want) {
			t.Errorf("PasswordForms(%q) = %q, want %q", tc.p, got, tc.want)
		}
	}
}
