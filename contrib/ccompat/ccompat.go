// Package ccompat serves a sqlstreams schema registry over the subset of
// Confluent Schema Registry's REST API that Kafka tooling speaks: franz-go's
// sr client, Confluent's Java RestService and the schema-registry maven
// plugin (register, test-compatibility).
//
// The registry is the one in the streams' database, so a schema a Go
// producer registered is served with its exact canonical text and its
// global id, and a registration through the API passes the same gate as a
// producer's (the stream's level, the readers deployed at the version, and
// the schemas that reference it).
//
// # Mapping
//
// A stream version is the subject "{stream}-v{version}", parsed by splitting
// at the last "-v<digits>" (stream names cannot contain '/', so the subject
// fits a URL path segment). Its subject version is the sqlstreams revision,
// its compatibility level the stream's (shared by every version of the
// stream, since the version number is sqlstreams' compatibility boundary),
// and it is never deleted: its revisions describe rows still in the log.
//
// Every other valid subject name is a free subject
// (sqlstreams.Registry.RegisterSubject), as Kafka clients name them:
// "orders-value" (TopicNameStrategy), "shop.orders.OrderPlaced"
// (RecordNameStrategy), "orders-shop.orders.OrderPlaced"
// (TopicRecordNameStrategy). A free subject has versions 1..n, its own
// level and mode (settable before its first version), and is deleted as
// Confluent documents it: soft, then permanent=true.
//
// A schema id is the global id of the schema's fingerprint, shared by
// every stream and subject that records the same schema. schemaType is
// JSON, AVRO or PROTOBUF (AVRO and PROTOBUF are enabled by default through
// contrib/avro and contrib/protobuf, as if the client had been opened with
// sqlstreams.WithFormats(avro.Format(), protobuf.Format())); a request
// without one means AVRO, as Confluent reads it. A document of another type
// than JSON is served as registered (normalize=true registers an Avro
// schema's canonical form instead; Protobuf text is kept as sent, its
// canonical form being a binary descriptor). Modes map one to one
// (READONLY_OVERRIDE has no counterpart); IMPORT where schemas exist needs
// force=true.
package ccompat

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/contrib/avro"
	"github.com/sqlstreams/sqlstreams/contrib/protobuf"
	sqlstreams "github.com/sqlstreams/sqlstreams/core"
)

// ContentType is the media type of every answer.
const ContentType = "application/vnd.schemaregistry.v1+json"

// Options configure the handler. The zero value (or nil) serves the
// default subject mapping without authentication.
type Options struct {
	// SubjectName names the subject of a stream version; the default is
	// "{stream}-v{version}". Set ParseSubject to its inverse.
	SubjectName func(stream string, version int) string
	// ParseSubject reads a subject; ok is false for a subject that names no
	// stream version. The default splits at the last "-v<digits>".
	ParseSubject func(subject string) (stream string, version int, ok bool)
	// ValueAlias serves every "{stream}-value" as a read-only alias of the
	// stream's highest version (what Go producers registered) instead of
	// as a free subject of its own; without it "{stream}-value" is a free
	// subject, which is what Kafka clients with TopicNameStrategy need.
	ValueAlias bool
	// BasicAuth, when set, requires these credentials on every request
	// (what sr.BasicAuth sends).
	BasicAuth *BasicAuth
	// BearerToken, when set, requires "Authorization: Bearer <token>" (what
	// sr.BearerToken sends). With both set either one is accepted.
	BearerToken string
	// Logger receives server-side failures; the default is slog.Default().
	Logger *slog.Logger
}

// BasicAuth is a user and password.
type BasicAuth struct {
	User, Password string
}

// SubjectName is the default subject of a stream version.
func SubjectName(stream string, version int) string {
	return stream + "-v" + strconv.Itoa(version)
}

// ParseSubject is the default inverse of SubjectName: it splits at the
// last "-v<digits>", so "orders-v2-v1" is stream "orders-v2", version 1.
func ParseSubject(subject string) (stream string, version int, ok bool) {
	i := strings.LastIndex(subject, "-v")
	if i <= 0 {
		return "", 0, false
	}
	digits := subject[i+2:]
	if digits == "" || digits[0] == '0' || strings.TrimLeft(digits, "0123456789") != "" {
		return "", 0, false
	}
	v, err := strconv.Atoi(digits)
	if err != nil || v < 1 || v > sqlstreams.MaxSchemaVersion {
		return "", 0, false
	}
	return subject[:i], v, true
}

// NewHandler serves the client's registry. opts may be nil.
func NewHandler(client *sqlstreams.Client, opts *Options) http.Handler {
	h := &handler{client: client, reg: client.Registry()}
	if opts != nil {
		h.opts = *opts
	}
	if reg, err := h.reg.WithFormats(avro.Format(), protobuf.Format()); err == nil {
		h.reg = reg
	}
	if h.opts.SubjectName == nil {
		h.opts.SubjectName = SubjectName
	}
	if h.opts.ParseSubject == nil {
		h.opts.ParseSubject = ParseSubject
	}
	if h.opts.Logger == nil {
		h.opts.Logger = slog.Default()
	}
	mux := http.NewServeMux()
	for _, r := range h.routes() {
		mux.HandleFunc(r.pattern, r.fn)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" && r.Method == http.MethodGet {
			h.write(w, http.StatusOK, struct{}{})
			return
		}
		h.fail(w, r, &apiError{status: http.StatusNotFound, code: 404, msg: fmt.Sprintf("HTTP 404 Not Found: no route %s %s", r.Method, r.URL.Path)})
	})
	h.mux = mux
	return h
}

type handler struct {
	client *sqlstreams.Client
	reg    *sqlstreams.Registry
	opts   Options
	mux    *http.ServeMux
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="sqlstreams"`)
		h.fail(w, r, &apiError{status: http.StatusUnauthorized, code: 401, msg: "unauthorized: send the configured basic credentials or bearer token"})
		return
	}
	if p := r.URL.Path; cleanPath(p) != p {
		// The mux would answer a bare 301, which a client follows as a GET.
		h.fail(w, r, &apiError{status: http.StatusNotFound, code: 404,
			msg: fmt.Sprintf("HTTP 404 Not Found: %q has an empty, '.' or '..' segment; subjects are {stream}-v{version}", p)})
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if ct := r.Header.Get("Content-Type"); !acceptedBody(ct) {
			h.fail(w, r, &apiError{status: http.StatusUnsupportedMediaType, code: 415,
				msg: fmt.Sprintf("HTTP 415 Unsupported Media Type %q; send application/vnd.schemaregistry.v1+json", ct)})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	}
	h.mux.ServeHTTP(w, r)
}

const maxBody = 8 << 20

// cleanPath is p as http.ServeMux cleans it before routing: without empty,
// '.' or '..' segments, keeping a trailing slash.
func cleanPath(p string) string {
	c := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// acceptedBody reports whether a request body's Content-Type is one this
// API reads. Confluent's Java RestService sends a weighted list
// ("application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json;
// qs=0.9, application/json; qs=0.5") as the Content-Type, so any listed
// type counts. No Content-Type at all is read as JSON.
func acceptedBody(v string) bool {
	if strings.TrimSpace(v) == "" {
		return true
	}
	for _, part := range strings.Split(v, ",") {
		t, _, _ := strings.Cut(part, ";")
		switch strings.ToLower(strings.TrimSpace(t)) {
		case "application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json", "application/json", "application/octet-stream":
			return true
		}
	}
	return false
}

func (h *handler) authorized(r *http.Request) bool {
	if h.opts.BasicAuth == nil && h.opts.BearerToken == "" {
		return true
	}
	if b := h.opts.BasicAuth; b != nil {
		if u, p, ok := r.BasicAuth(); ok && u == b.User && p == b.Password {
			return true
		}
	}
	if tok := h.opts.BearerToken; tok != "" && r.Header.Get("Authorization") == "Bearer "+tok {
		return true
	}
	return false
}

// apiError is an answer in Confluent's error envelope.
type apiError struct {
	status int
	code   int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

// The error codes, as Confluent's RestException subclasses number them.
const (
	codeSubjectNotFound = 40401
	codeVersionNotFound = 40402
	codeSchemaNotFound  = 40403
	// A deletion out of order: soft-deleting twice (40404, 40406) or a
	// permanent deletion before the soft one (40405, 40407).
	codeSubjectSoftDeleted    = 40404
	codeSubjectNotSoftDeleted = 40405
	codeVersionSoftDeleted    = 40406
	codeVersionNotSoftDeleted = 40407
	codeSubjectLevelNoLevel   = 40408
	codeSubjectLevelNoMode    = 40409
	codeIncompatible          = 409
	codeInvalidSchema         = 42201
	codeInvalidVersion        = 42202
	codeInvalidLevel          = 42203
	codeInvalidMode           = 42204
	codeNotPermitted          = 42205
	codeReferenceExists       = 42206
	codeIDDoesNotMatch        = 42207
	codeInvalidSubject        = 42208
	codeStore                 = 50001
)

func errorf(status, code int, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

func (h *handler) write(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error_code":50001,"message":"cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// fail answers err in the envelope; errors that are not an *apiError are
// mapped from the library's sentinels.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = h.mapError(err)
	}
	if ae.status >= 500 {
		h.opts.Logger.Error("ccompat: request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	h.write(w, ae.status, struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}{ae.code, ae.msg})
}

func (h *handler) mapError(err error) *apiError {
	var ie *sqlstreams.IncompatibleSchemaError
	switch {
	case errors.As(err, &ie):
		subject := ie.Subject
		if subject == "" {
			subject = h.opts.SubjectName(ie.Stream, ie.Version)
		}
		return errorf(http.StatusConflict, codeIncompatible, "Schema being registered is incompatible with an earlier schema for subject %q; details: [%s]",
			subject, strings.Join(problemMessages(ie), "; "))
	case errors.Is(err, sqlstreams.ErrSubjectNotFound):
		return errorf(http.StatusNotFound, codeSubjectNotFound, "Subject not found: %v", err)
	case errors.Is(err, sqlstreams.ErrSubjectVersionNotFound):
		return errorf(http.StatusNotFound, codeVersionNotFound, "Version not found: %v", err)
	case errors.Is(err, sqlstreams.ErrNotSoftDeleted):
		return errorf(http.StatusNotFound, codeVersionNotSoftDeleted, "Not deleted first before being permanently deleted: %v", err)
	case errors.Is(err, sqlstreams.ErrReferenced):
		return errorf(http.StatusUnprocessableEntity, codeReferenceExists, "One or more references exist to the schema: %v", err)
	case errors.Is(err, sqlstreams.ErrSchemaInUse):
		return errorf(http.StatusUnprocessableEntity, codeNotPermitted, "Operation not permitted: %v", err)
	case errors.Is(err, sqlstreams.ErrNotEmpty):
		return errorf(http.StatusUnprocessableEntity, codeNotPermitted, "Operation not permitted: %v", err)
	case errors.Is(err, sqlstreams.ErrReadOnly):
		return errorf(http.StatusUnprocessableEntity, codeNotPermitted, "%v", err)
	case errors.Is(err, sqlstreams.ErrStreamNotFound):
		return errorf(http.StatusNotFound, codeSubjectNotFound, "Subject not found: %v", err)
	case errors.Is(err, sqlstreams.ErrRevisionNotFound):
		return errorf(http.StatusNotFound, codeVersionNotFound, "Version not found: %v", err)
	case errors.Is(err, sqlstreams.ErrSchemaNotFound):
		return errorf(http.StatusNotFound, codeSchemaNotFound, "Schema not found: %v", err)
	case errors.Is(err, sqlstreams.ErrSchemaIDTaken):
		return errorf(http.StatusUnprocessableEntity, codeIDDoesNotMatch, "Provided id does not match: %v", err)
	case errors.Is(err, sqlstreams.ErrReferenceNotFound), errors.Is(err, sqlstreams.ErrInvalidOption):
		return errorf(http.StatusUnprocessableEntity, codeInvalidSchema, "Invalid schema: %v", err)
	case errors.Is(err, sqlstreams.ErrInvalidName):
		return errorf(http.StatusUnprocessableEntity, codeInvalidSubject, "Invalid subject: %v", err)
	}
	return errorf(http.StatusInternalServerError, codeStore, "Error in the backend data store: %v", err)
}

// problemMessages are the problems in verbose form, one per problem the
// library reports: "<KIND> at <json path>: <advice>; against <what>".
func problemMessages(ie *sqlstreams.IncompatibleSchemaError) []string {
	out := make([]string, len(ie.Problems))
	for i, p := range ie.Problems {
		out[i] = fmt.Sprintf("%s at %s: %s (against %s, %s)", p.Kind, p.Path, p.Message, p.Against, p.Direction)
	}
	return out
}
