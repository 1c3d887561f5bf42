package logcap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	ctrlzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// newLogger is the mains' JSON logger at --zap-log-level=128 (every V-level on, zap level
// -128), capped, with the caller recorded; it writes to buf.
func newLogger(buf *bytes.Buffer) logr.Logger {
	return Logger(ctrlzap.New(ctrlzap.WriteTo(buf), ctrlzap.Level(zapcore.Level(-128)), ctrlzap.JSONEncoder(),
		ctrlzap.RawZapOpts(zap.AddCaller())))
}

// lines decodes the JSON lines in buf.
func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	l := newLogger(&buf).WithName("spoke").WithValues("controller", "rayservice")
	for v := 0; v <= 10; v++ {
		l.V(v).Info(fmt.Sprintf("at %d", v))
	}
	// As client-go logs a body: through a helper that adds call depth.
	l.V(8).WithCallDepth(2).Info("Response Body", "body", "a Secret")
	l.V(2).V(6).Info("at 2+6")
	l.Error(errors.New("boom"), "failed")

	var got []string
	for _, m := range lines(t, &buf) {
		got = append(got, fmt.Sprint(m["msg"]))
		if m["logger"] != "spoke" || m["controller"] != "rayservice" {
			t.Errorf("%v lost the logger's name or values", m)
		}
	}
	want := []string{"at 0", "at 1", "at 2", "at 3", "at 4", "at 5", "at 6", "at 7", "failed"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("logged %q, want %q", got, want)
	}
	if !l.V(MaxVerbosity).Enabled() || l.V(MaxVerbosity+1).Enabled() {
		t.Errorf("V(%d) enabled %v, V(%d) enabled %v; want true, false", MaxVerbosity,
			l.V(MaxVerbosity).Enabled(), MaxVerbosity+1, l.V(MaxVerbosity+1).Enabled())
	}
}

func TestLoggerKeepsTheLevel(t *testing.T) {
	var buf bytes.Buffer
	// --zap-log-level=info: V(1) and above off before any cap.
	l := Logger(ctrlzap.New(ctrlzap.WriteTo(&buf), ctrlzap.Level(zapcore.InfoLevel), ctrlzap.JSONEncoder()))
	l.V(1).Info("debug")
	l.Info("info")
	if got := strings.Count(buf.String(), "\n"); got != 1 || !strings.Contains(buf.String(), `"info"`) {
		t.Errorf("logged %q, want the info line only", buf.String())
	}
}

// TestLoggerCaller checks that the cap does not shift the caller zap reports: the lines are
// this file's, not logcap.go's.
func TestLoggerCaller(t *testing.T) {
	var buf bytes.Buffer
	l := newLogger(&buf)
	l.Info("here")
	l.V(1).WithName("named").WithValues("k", "v").Info("here too")
	l.Error(errors.New("boom"), "and here")
	for _, m := range lines(t, &buf) {
		if c, _ := m["caller"].(string); !strings.HasPrefix(c, "logcap/logcap_test.go:") {
			t.Errorf("%q: caller = %q, want logcap/logcap_test.go:<line>", m["msg"], c)
		}
	}
}
