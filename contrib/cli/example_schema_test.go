package sqlstreamscli_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	sqlstreamscli "github.com/sqlstreams/sqlstreams/contrib/cli"
)

// Register an Avro schema and gate its next revision, as a CI job would:
// the type comes from the .avsc extension, and a field without a default
// is refused with exit 3, naming the field.
func ExampleNew_schemaRegister() {
	dir, _ := os.MkdirTemp("", "cli-example-")
	defer os.RemoveAll(dir)
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		_ = os.WriteFile(path, []byte(text), 0o644)
		return path
	}
	v1 := write("v1.avsc", `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}`)
	v2 := write("v2.avsc", `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"channel","type":"string"}]}`)
	run := func(args ...string) int {
		// stderr repeats the verdict with the file's (temporary) path
		cli := sqlstreamscli.New(&sqlstreamscli.Options{Stdout: os.Stdout, Stderr: io.Discard})
		return cli.Execute(context.Background(), append([]string{"--url", "sqlite:" + filepath.Join(dir, "app.db")}, args...))
	}
	fmt.Println("exit", run("schema", "register", "orders", "1", v1))
	fmt.Println("exit", run("schema", "check", "orders", "1", v2))
	// Output:
	// STREAM  VERSION  REVISION  TYPE  ID  FINGERPRINT
	// orders  v1       1         AVRO  1   401042de8d2d3ab0dff8169f3f3901bd8800e79b6cdbd51a714e2ac9cc0ce9c1
	// exit 0
	// AGAINST     DIRECTION             KIND                                PATH       MESSAGE
	// revision 1  new reader, old data  READER_FIELD_MISSING_DEFAULT_VALUE  /fields/1  reader field Order.channel has no default and the writer has no field channel; give it a default, or add it under a new schema version
	// exit 3
}
