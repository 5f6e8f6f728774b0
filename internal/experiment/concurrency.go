package experiment

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/innowarm/innowarm/internal/bench"
	"github.com/innowarm/innowarm/internal/connection"
	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/logx"
	"github.com/innowarm/innowarm/internal/progress"
	"github.com/innowarm/innowarm/internal/sqltext"
)

// The original matrix (MariaDB 10.0, HDD): mysqlslap --auto-generate-sql
// --auto-generate-sql-add-autoincrement --auto-generate-sql-load-type=mixed --engine=innodb
// --iterations 3, at each concurrency with these queries per client.
var (
	OriginalClients   = []int{1, 10, 30, 50, 100}
	OriginalPerClient = []int64{1_000, 10_000, 100_000, 300_000, 500_000, 1_000_000}
	// OriginalSeconds are its average seconds, [clients][queries per client].
	OriginalSeconds = [][]float64{
		{0.616, 6.807, 59.929, 187.449, 331.493, 658.997},
		{1.402, 11.581, 112.985, 353.238, 580.314, 1167.205},
		{2.164, 16.258, 159.104, 485.546, 806.649, 1619.508},
		{2.353, 19.891, 206.43, 588.127, 998.991, 1986.052},
		{3.725, 30.355, 299.008, 900.876, 1488.621, 2993.594},
	}
)

// ConcurrencyOptions configure the concurrency experiment.
type ConcurrencyOptions struct {
	Schema     string
	Clients    []int
	Scale      float64 // multiplies the original queries per client
	Iterations int
	KeepData   bool // keep the schema bench creates
	Progress   progress.Config
	Log        *logx.Logger
}

// Cell is one concurrency level at one number of queries per client.
type Cell struct {
	Clients          int     `json:"clients"`
	QueriesPerClient int64   `json:"queries_per_client"`
	Queries          int64   `json:"queries"` // all clients, all iterations
	AvgSeconds       float64 `json:"avg_seconds"`
	MinSeconds       float64 `json:"min_seconds"`
	MaxSeconds       float64 `json:"max_seconds"`
	// MsPerQuery is the original's second table: the average seconds over the queries per
	// client, in milliseconds; from the measured query time, since mysqlslap's average is
	// in whole milliseconds and a cell of a few sub-millisecond queries would read 0.
	MsPerQuery float64 `json:"ms_per_query"`
	QPS        float64 `json:"qps"`
	P50        float64 `json:"p50_ms"`
	P95        float64 `json:"p95_ms"`
	P99        float64 `json:"p99_ms"`
	Errors     int64   `json:"errors"`
}

// ConcurrencyParams are the options as the report shows them.
type ConcurrencyParams struct {
	Clients    []int   `json:"clients"`
	PerClient  []int64 `json:"queries_per_client"`
	Scale      float64 `json:"scale"`
	Iterations int     `json:"iterations"`
	Schema     string  `json:"schema"`
}

// ConcurrencyResult is everything the concurrency experiment measured.
type ConcurrencyResult struct {
	Header
	Params ConcurrencyParams `json:"parameters"`
	Cells  []Cell            `json:"cells"`
}

// Cell finds a cell, or nil.
func (r *ConcurrencyResult) Cell(clients int, perClient int64) *Cell {
	for i := range r.Cells {
		if r.Cells[i].Clients == clients && r.Cells[i].QueriesPerClient == perClient {
			return &r.Cells[i]
		}
	}
	return nil
}

// ScaledPerClient are the original queries per client times scale, at least 1, without
// repeats.
func ScaledPerClient(scale float64) []int64 {
	var out []int64
	for _, n := range OriginalPerClient {
		v := int64(math.Round(float64(n) * scale))
		if v < 1 || slices.Contains(out, v) {
			continue
		}
		out = append(out, v)
	}
	return out
}

// ValidateConcurrency checks the options that need no server.
func ValidateConcurrency(o ConcurrencyOptions) error {
	switch {
	case o.Scale <= 0 || math.IsNaN(o.Scale) || math.IsInf(o.Scale, 0):
		return exitcode.BadValue("Scale", "must be more than 0, got %g", o.Scale)
	case o.Scale > 1:
		return exitcode.BadValue("Scale", "%g is more than the original (1): at 1 the matrix already runs for hours", o.Scale)
	case len(ScaledPerClient(o.Scale)) == 0:
		return exitcode.BadValue("Scale", "%g leaves no query to run", o.Scale)
	case o.Iterations < 1:
		return exitcode.BadValue("Iterations", "must be at least 1, got %d", o.Iterations)
	case len(o.Clients) == 0:
		return exitcode.BadValue("Concurrency", "is empty")
	}
	return nil
}

// Concurrency runs mysqlslap's auto-generated mixed load (INSERTs and primary-key SELECTs
// on t1 with an AUTO_INCREMENT id) at every concurrency level and number of queries per
// client, each cell --iterations times, as the 2015 MariaDB article did.
func Concurrency(ctx context.Context, t *Target, o ConcurrencyOptions) (*ConcurrencyResult, error) {
	if o.Clients == nil {
		o.Clients = OriginalClients
	}
	if o.Iterations == 0 {
		o.Iterations = 3
	}
	if err := ValidateConcurrency(o); err != nil {
		return nil, err
	}
	if o.Schema == "" {
		o.Schema = "innowarm_concurrency"
	}
	conn, h, log, err := begin(ctx, t, "concurrency", o.Log)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := checkBenchSchema(ctx, conn, o.Schema); err != nil {
		return nil, err
	}
	per := ScaledPerClient(o.Scale)
	res := &ConcurrencyResult{Header: h,
		Params: ConcurrencyParams{Clients: o.Clients, PerClient: per, Scale: o.Scale, Iterations: o.Iterations, Schema: o.Schema}}
	t0 := time.Now()
	defer res.finish(t0)
	for _, c := range o.Clients {
		for _, n := range per {
			cell, err := concurrencyCell(ctx, conn, o, c, n, log)
			if err != nil {
				return res, err
			}
			res.Cells = append(res.Cells, *cell)
			if !o.Progress.Quiet {
				log.Infof("concurrency %d x %s queries per client: %.3f s (%.3f ms a query), %.0f QPS, p95 %.2f ms",
					c, commas(n), cell.AvgSeconds, cell.MsPerQuery, cell.QPS, cell.P95)
			}
		}
	}
	return res, nil
}

// innowarm bench's marks on a schema it created (internal/bench/schema.go, unexported
// there): the concurrency experiment's schema is bench's.
const (
	benchOwnerComment = "created by innowarm bench, which may drop it"
	benchOwnerTable   = "innowarm_bench_owner"
)

// checkBenchSchema refuses a schema that exists and is not innowarm bench's before the
// first cell: bench would refuse it too, but in bench's words, naming its own flags
// (--create-schema, --allow-writes-in-existing-schema) that this command does not have.
func checkBenchSchema(ctx context.Context, conn *connection.Conn, name string) error {
	exists, owned, err := markedSchema(ctx, conn, name, benchOwnerComment, benchOwnerTable)
	if err != nil || !exists || owned {
		return err
	}
	return exitcode.UsageError(fmt.Errorf("schema %s exists and was not created by innowarm: the mixed load writes, so it runs only in a schema of its own: choose another with --schema", sqltext.Ident(name)))
}

// concurrencyCell runs one cell with innowarm bench: mysqlslap's generated SQL, its
// per-iteration load phase in a schema bench creates and drops, and latency percentiles.
func concurrencyCell(ctx context.Context, conn *connection.Conn, o ConcurrencyOptions, clients int, perClient int64, log *logx.Logger) (*Cell, error) {
	bo := bench.Defaults()
	bo.AutoGenerate, bo.Auto.AddAutoincrement, bo.EngineSpec = true, true, "innodb"
	bo.ConcurrencySpec, bo.Iterations, bo.Schema = strconv.Itoa(clients), o.Iterations, o.Schema
	bo.NumberOfQueries = uint64(perClient) * uint64(clients)
	bo.NoDrop = o.KeepData
	if !o.Progress.Quiet {
		bo.ReportInterval = 5 * time.Second
	}
	plan, err := bench.NewPlan(bo)
	if err != nil {
		return nil, err
	}
	sink := &bench.Sink{}
	if bo.ReportInterval > 0 {
		sink.Intervals = &prefixLog{log: log, prefix: fmt.Sprintf("concurrency %d x %d: ", clients, perClient)}
	}
	rep, err := bench.Run(ctx, plan, bench.Env{Admin: conn, Sink: sink, Log: logx.New(log.Writer(), true)})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("concurrency %d, %d queries per client: %w", clients, perClient, err)
	}
	if len(rep.Runs) == 0 {
		return nil, fmt.Errorf("concurrency %d, %d queries per client: nothing was measured", clients, perClient)
	}
	l := rep.Runs[0]
	c := &Cell{Clients: clients, QueriesPerClient: perClient, Queries: l.Queries, AvgSeconds: l.AvgSeconds, MinSeconds: l.MinSeconds,
		MaxSeconds: l.MaxSeconds, QPS: l.QPS, P50: l.Latency.P50, P95: l.Latency.P95, P99: l.Latency.P99, Errors: l.Errors}
	c.MsPerQuery = l.QuerySeconds / float64(max(o.Iterations, 1)) * 1000 / float64(perClient)
	return c, nil
}
