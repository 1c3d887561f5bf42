// Package logcap caps the verbosity of the hub's and the spoke's logger. client-go logs every
// request and response body of the API calls made with a logger in their context from V(8) on
// (cut at 1 KiB, whole from V(10)), and controller-runtime puts the manager's logger into every
// reconcile's context: at --zap-log-level=8 or above, each Secret the spoke creates or reads (Ray
// auth tokens) and each kubeconfig Secret the hub lists would be written to the log. Nothing
// the hub, the spoke or controller-runtime logs is above V(7), so the cap costs none of their
// messages.
// It imports no other package of the repository.
package logcap

import "github.com/go-logr/logr"

// MaxVerbosity is the highest V-level that reaches the log: the level below client-go's body
// dumps.
const MaxVerbosity = 7

// Logger returns l with every V-level above MaxVerbosity off, whatever its own level says.
func Logger(l logr.Logger) logr.Logger {
	inner := l.GetSink()
	if inner == nil {
		return l
	}
	// The capping sink is one more frame between the caller and inner; inner was initialised
	// for logr's own frames already.
	if cd, ok := inner.(logr.CallDepthLogSink); ok {
		inner = cd.WithCallDepth(1)
	}
	return logr.New(capped{inner: inner})
}

// capped is a LogSink that drops what inner would log above MaxVerbosity.
type capped struct {
	inner logr.LogSink
}

// Init does nothing: inner was initialised by the logger it came from.
func (capped) Init(logr.RuntimeInfo) {}

// Enabled is inner's answer up to MaxVerbosity, false above.
func (s capped) Enabled(level int) bool {
	return level <= MaxVerbosity && s.inner.Enabled(level)
}

// Info logs through inner up to MaxVerbosity. logr asks Enabled first; this checks again for
// callers that hold the sink itself.
func (s capped) Info(level int, msg string, keysAndValues ...any) {
	if level <= MaxVerbosity {
		s.inner.Info(level, msg, keysAndValues...)
	}
}

// Error always logs: errors have no V-level.
func (s capped) Error(err error, msg string, keysAndValues ...any) {
	s.inner.Error(err, msg, keysAndValues...)
}

// WithValues keeps the cap on the derived sink.
func (s capped) WithValues(keysAndValues ...any) logr.LogSink {
	return capped{inner: s.inner.WithValues(keysAndValues...)}
}

// WithName keeps the cap on the derived sink.
func (s capped) WithName(name string) logr.LogSink {
	return capped{inner: s.inner.WithName(name)}
}

// WithCallDepth passes the depth on to inner (client-go logs bodies through helpers that add
// frames), keeping the cap.
func (s capped) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.inner.(logr.CallDepthLogSink); ok {
		return capped{inner: cd.WithCallDepth(depth)}
	}
	return s
}
