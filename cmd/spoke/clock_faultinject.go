//go:build faultinject

package main

import (
	"fmt"
	"os"
	"time"

	"k8s.io/utils/clock"
)

// clockOffsetEnv offsets the heartbeat clock of a faultinject build (bin/spoke-faultinject),
// so that the e2e tests can run a member whose clock is off: libfaketime does not reach Go's
// clock, and production builds have no such setting.
const clockOffsetEnv = "RAYFLEET_FAULT_CLOCK_OFFSET"

// offsetClock is the real clock shifted by offset; timers and tickers run at the real pace.
type offsetClock struct {
	clock.RealClock
	offset time.Duration
}

func (c offsetClock) Now() time.Time                  { return c.RealClock.Now().Add(c.offset) }
func (c offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func heartbeatClock() (clock.Clock, error) {
	v := os.Getenv(clockOffsetEnv)
	if v == "" {
		return clock.RealClock{}, nil
	}
	offset, err := time.ParseDuration(v)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", clockOffsetEnv, v, err)
	}
	return offsetClock{offset: offset}, nil
}
