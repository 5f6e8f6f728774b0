package agent

import (
	"math"
	"time"
)

// State is where the server stands, as the agent sees it.
type State string

// The states, in the order a server run goes through them.
const (
	Starting State = "starting" // the server has not answered this agent yet
	Warming  State = "warming"  // it answers; coverage is below the threshold
	Ready    State = "ready"    // coverage reached the threshold in this server run
	Down     State = "down"     // it answered, then stopped answering
)

// States lists every state (the metrics' label values).
var States = []State{Starting, Warming, Ready, Down}

// Warm states.
const (
	WarmOff         = "off"         // no warm configured
	WarmPending     = "pending"     // configured; waits for the server
	WarmRunning     = "running"     // reading pages
	WarmDone        = "done"        // finished
	WarmFailed      = "failed"      // stopped by an error (the agent keeps serving)
	WarmSkipped     = "skipped"     // not needed: ready at the first measure, or nothing to warm
	WarmInterrupted = "interrupted" // stopped by the agent's shutdown or the server's loss
)

// WarmStatus is the warm of the current server run.
type WarmStatus struct {
	State      string     `json:"state"`
	Method     string     `json:"method,omitempty"`
	Why        string     `json:"why,omitempty"`
	DonePages  int64      `json:"done_pages"`
	TotalPages int64      `json:"total_pages"`
	Progress   float64    `json:"progress"` // done over total pages, 0 to 1
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Seconds    float64    `json:"seconds,omitempty"`
	Loaded     int64      `json:"pages_loaded,omitempty"` // pages resident after that were not before
	Note       string     `json:"note,omitempty"`
	Error      string     `json:"error,omitempty"`
}

// CoverageStatus is the last measure of the target.
type CoverageStatus struct {
	Target string `json:"target"`
	// Known is false until a first measure (or when the target has no pages).
	Known bool `json:"known"`
	// Coverage is the lower bound (what readiness and the weight use); CoverageHigh the
	// upper. They are equal right after a count.
	Coverage     float64    `json:"coverage"`
	CoverageHigh float64    `json:"coverage_high"`
	Covered      int64      `json:"covered_pages"` // at the last count
	Total        int64      `json:"target_pages"`
	Counted      bool       `json:"counted"` // the last measure counted pages (not only read the counters)
	CountedAt    *time.Time `json:"counted_at,omitempty"`
	CountSeconds float64    `json:"count_seconds"`
	Counts       int64      `json:"counts"` // exact counts in this agent's life
	MeasuredAt   *time.Time `json:"measured_at,omitempty"`
	// MeasureSeconds is what the last measure took: the status read, and the count when
	// there was one.
	MeasureSeconds float64 `json:"measure_seconds"`
	Error          string  `json:"error,omitempty"`
}

// ServerStatus is what the agent knows of its server.
type ServerStatus struct {
	Target    string     `json:"target"` // host:port or socket
	Up        bool       `json:"up"`
	Version   string     `json:"version,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"` // this server run's start
	Runs      int64      `json:"runs"`                 // server runs this agent has followed (restarts + 1)
	PoolBytes int64      `json:"pool_bytes,omitempty"`
	Error     string     `json:"error,omitempty"` // why it is not up
}

// SnapshotStatus is the snapshot --every the agent keeps.
type SnapshotStatus struct {
	Path      string     `json:"path"`
	Every     string     `json:"every"`
	Running   bool       `json:"running"`
	Captures  int64      `json:"captures"`
	Failures  int64      `json:"failures,omitempty"` // captures that failed to replace the manifest
	LastAt    *time.Time `json:"last_at,omitempty"`
	LastPages int64      `json:"last_pages,omitempty"`
	Error     string     `json:"error,omitempty"`
}

// Answer is one reply to an HAProxy agent check.
type Answer struct {
	Seq      int64     `json:"seq"`
	At       time.Time `json:"at"`
	Text     string    `json:"text"`
	Weight   int       `json:"weight"`
	Coverage float64   `json:"coverage"`
	From     string    `json:"from"`
}

// AgentCheckStatus counts the agent-check answers; Recent are the last few, oldest first.
type AgentCheckStatus struct {
	Listen  string   `json:"listen"`
	Answers int64    `json:"answers"`
	Refused int64    `json:"refused"` // connections from addresses not allowed
	Recent  []Answer `json:"recent"`
}

// Status is /status: everything the agent knows.
type Status struct {
	State      State             `json:"state"`
	Ready      bool              `json:"ready"`
	Since      time.Time         `json:"since"`       // in this state since
	ReadyNote  string            `json:"ready_note"`  // why ready, or what it waits for
	Threshold  float64           `json:"threshold"`   // ready coverage
	Weight     int               `json:"weight"`      // percent, as the agent check answers
	ReadyAfter float64           `json:"ready_after"` // seconds from the server's start to ready in this run (0 until ready)
	Coverage   CoverageStatus    `json:"coverage"`
	Warm       WarmStatus        `json:"warm"`
	Server     ServerStatus      `json:"server"`
	Snapshot   *SnapshotStatus   `json:"snapshot,omitempty"`
	AgentCheck *AgentCheckStatus `json:"agent_check,omitempty"`
	Version    string            `json:"version"`
	Now        time.Time         `json:"now"`
}

// ReadyBody is /ready's answer: the state and what decides it. Coverage (and MeasuredAt)
// is null until measured, and while the server is down or not up yet.
type ReadyBody struct {
	State      State      `json:"state"`
	Ready      bool       `json:"ready"`
	Coverage   *float64   `json:"coverage"`
	Threshold  float64    `json:"threshold"`
	Weight     int        `json:"weight"`
	Warm       WarmStatus `json:"warm"`
	Detail     string     `json:"detail"`
	MeasuredAt *time.Time `json:"measured_at,omitempty"`
}

func (s Status) readyBody() ReadyBody {
	b := ReadyBody{State: s.State, Ready: s.Ready, Threshold: s.Threshold, Weight: s.Weight, Warm: s.Warm, Detail: s.ReadyNote}
	if c, ok := s.currentCoverage(); ok {
		b.Coverage, b.MeasuredAt = &c, s.Coverage.MeasuredAt
	}
	return b
}

// currentCoverage is the coverage of the server as it is now: none while it is down or
// not up yet. The last measure is of a server that no longer answers (or of a run that
// ended): a probe read "down" beside the warm figure it had before it stalled.
func (s Status) currentCoverage() (float64, bool) {
	if !s.Coverage.Known || (s.State != Warming && s.State != Ready) {
		return 0, false
	}
	return s.Coverage.Coverage, true
}

// weightFor is the agent check's weight in percent: 100 once ready, else the coverage's
// lower bound, never below the floor (so that a fleet of cold servers still shares traffic
// rather than all refusing it).
func weightFor(state State, coverage float64, known bool, floor int) int {
	switch state {
	case Ready:
		return 100
	case Warming:
		w := 0
		if known {
			w = int(math.Round(100 * coverage))
		}
		return min(max(w, floor), 100)
	}
	return 0
}
