package sqlstreamscli

import "github.com/spf13/cobra"

// Advise is advise for the table test, on a command whose arguments are
// STREAM GROUP.
func Advise(err error, stream, group string) error {
	return advise(&cobra.Command{Use: "x STREAM GROUP"}, []string{stream, group}, err)
}

// GoAPI matches the Go names a CLI error must not show.
var GoAPI = goAPI
