package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/ports"
)

// anaSize is a size as pg_size_pretty writes it: bytes below 10 kB, then the largest of
// kB, MB, GB, TB that keeps the number below 10240, rounded.
func anaSize(b int64) string {
	if b < 10*1024 {
		return fmt.Sprintf("%d bytes", b)
	}
	n := float64(b)
	for _, unit := range []string{"kB", "MB", "GB"} {
		n /= 1024
		if n < 10*1024-0.5 {
			return fmt.Sprintf("%.0f %s", n, unit)
		}
	}
	return fmt.Sprintf("%.0f TB", n/1024)
}

type anaDatabaseCache struct {
	Database      string  `json:"database"`
	CacheHits     int64   `json:"cacheHits"` // blocks found in shared buffers
	DiskReads     int64   `json:"diskReads"` // blocks read from the operating system
	CacheHitRatio float64 `json:"cacheHitRatio"`
	Commits       int64   `json:"commits"`
	Rollbacks     int64   `json:"rollbacks"`
	Deadlocks     int64   `json:"deadlocks"`
	Conflicts     int64   `json:"conflicts"`
	TempFiles     int64   `json:"tempFiles"`
	TempBytes     int64   `json:"tempBytes"`
	SizeBytes     int64   `json:"sizeBytes"`
	Size          string  `json:"size"`
	Backends      int64   `json:"backends"`
}

type anaCache struct {
	Index         string  `json:"index,omitempty"`
	Table         string  `json:"table,omitempty"`
	CacheHits     int64   `json:"cacheHits"`
	DiskReads     int64   `json:"diskReads"`
	CacheHitRatio float64 `json:"cacheHitRatio"` // percent
}

type anaCacheSum struct {
	CacheHits int64   `json:"cacheHits"`
	DiskReads int64   `json:"diskReads"`
	HitRatio  float64 `json:"hitRatio"` // percent
}

type anaCacheSummary struct {
	Tables  anaCacheSum `json:"tables"`
	Indexes anaCacheSum `json:"indexes"`
}

type anaSetting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Bytes int64  `json:"bytes"` // memory settings; 0 for others
}

type anaBufferConfig struct {
	SharedBuffersSize  string       `json:"sharedBuffersSize"`
	SharedBuffersBytes int64        `json:"sharedBuffersBytes"`
	EffectiveCacheSize string       `json:"effectiveCacheSize"`
	WorkMem            string       `json:"workMem"`
	MaintenanceWorkMem string       `json:"maintenanceWorkMem"`
	Settings           []anaSetting `json:"settings"`
}

type anaBufferUse struct {
	Object         string  `json:"object"`
	Buffers        int64   `json:"buffers"`
	BufferedBytes  int64   `json:"bufferedBytes"`
	BufferedSize   string  `json:"bufferedSize"`
	PercentOfCache float64 `json:"percentOfCache"`
}

type anaTableSize struct {
	Table      string `json:"table"`
	TotalSize  string `json:"totalSize"`
	TableSize  string `json:"tableSize"`
	IndexSize  string `json:"indexSize"`
	TotalBytes int64  `json:"totalBytes"`
	TableBytes int64  `json:"tableBytes"`
	IndexBytes int64  `json:"indexBytes"`
}

type anaDeadTuples struct {
	Table          string  `json:"table"`
	DeadTuples     int64   `json:"deadTuples"`
	LiveTuples     int64   `json:"liveTuples"`
	DeadPercentage float64 `json:"deadPercentage"`
	LastVacuum     *string `json:"lastVacuum"`
	LastAutovacuum *string `json:"lastAutovacuum"`
}

type anaHotUpdates struct {
	Table               string  `json:"table"`
	TotalUpdates        int64   `json:"totalUpdates"`
	HotUpdates          int64   `json:"hotUpdates"`
	HotUpdatePercentage float64 `json:"hotUpdatePercentage"`
}

type anaActiveQuery struct {
	PID             int64   `json:"pid"`
	State           string  `json:"state"`
	Duration        float64 `json:"duration"` // seconds
	Query           string  `json:"query"`    // its first 500 characters
	WaitEventType   *string `json:"waitEventType"`
	WaitEvent       *string `json:"waitEvent"`
	ApplicationName string  `json:"applicationName"`
}

type anaAutovacuum struct {
	Table            string  `json:"table"`
	DeadTuples       int64   `json:"deadTuples"`
	VacuumThreshold  int64   `json:"vacuumThreshold"`
	AutovacuumCount  int64   `json:"autovacuumCount"`
	VacuumCount      int64   `json:"vacuumCount"`
	AutoanalyzeCount int64   `json:"autoanalyzeCount"`
	LastAutovacuum   *string `json:"lastAutovacuum"`
	LastAutoanalyze  *string `json:"lastAutoanalyze"`
}

type anaPostgresResponse struct {
	Database         string           `json:"database"`
	DatabaseCache    anaDatabaseCache `json:"databaseCache"`
	TableCache       []anaCache       `json:"tableCache"`
	IndexCache       []anaCache       `json:"indexCache"`
	CacheSummary     anaCacheSummary  `json:"cacheSummary"`
	BufferConfig     anaBufferConfig  `json:"bufferConfig"`
	BufferUsage      []anaBufferUse   `json:"bufferUsage,omitempty"` // with pg_buffercache only
	TableSizes       []anaTableSize   `json:"tableSizes"`
	DeadTuples       []anaDeadTuples  `json:"deadTuples"`
	HotUpdates       []anaHotUpdates  `json:"hotUpdates"`
	ActiveQueries    []anaActiveQuery `json:"activeQueries"`
	AutovacuumStatus []anaAutovacuum  `json:"autovacuumStatus"`
	Timestamp        string           `json:"timestamp"`
}

func anaCacheOf(c admin.CacheRatio, index bool) anaCache {
	out := anaCache{Table: c.Table, CacheHits: c.Hits, DiskReads: c.Reads, CacheHitRatio: c.Ratio}
	if index {
		out.Index = c.Name
	}
	return out
}

func anaSumOf(c admin.CacheRatio) anaCacheSum {
	return anaCacheSum{CacheHits: c.Hits, DiskReads: c.Reads, HitRatio: c.Ratio}
}

func anaBufferConfigOf(settings []ports.Setting) anaBufferConfig {
	out := anaBufferConfig{Settings: make([]anaSetting, len(settings))}
	for i, s := range settings {
		out.Settings[i] = anaSetting{Name: s.Name, Value: s.Value, Bytes: s.Bytes}
		switch s.Name {
		case "shared_buffers":
			out.SharedBuffersSize, out.SharedBuffersBytes = s.Value, s.Bytes
		case "effective_cache_size":
			out.EffectiveCacheSize = s.Value
		case "work_mem":
			out.WorkMem = s.Value
		case "maintenance_work_mem":
			out.MaintenanceWorkMem = s.Value
		}
	}
	return out
}

// handlePostgresStats is GET /api/v1/analytics/postgres-stats (docs/api.md §5.11a): read
// live from PostgreSQL's statistics views.
func (a *api) handlePostgresStats(w http.ResponseWriter, r *http.Request) {
	rep, err := a.Analytics.Postgres(r.Context())
	if err != nil {
		writeError(w, a.opts.Logger, err)
		return
	}
	st, db := rep.Stats, rep.Stats.Database
	out := anaPostgresResponse{Database: db.Name,
		DatabaseCache: anaDatabaseCache{Database: db.Name, CacheHits: db.Hits, DiskReads: db.Reads,
			CacheHitRatio: rep.Database.Ratio, Commits: db.Commits, Rollbacks: db.Rollbacks, Deadlocks: db.Deadlocks,
			Conflicts: db.Conflicts, TempFiles: db.TempFiles, TempBytes: db.TempBytes, SizeBytes: db.SizeBytes,
			Size: anaSize(db.SizeBytes), Backends: db.Backends},
		TableCache: make([]anaCache, len(rep.Tables)), IndexCache: make([]anaCache, len(rep.Indexes)),
		CacheSummary: anaCacheSummary{Tables: anaSumOf(rep.TablesSum), Indexes: anaSumOf(rep.IndexesSum)},
		BufferConfig: anaBufferConfigOf(st.Settings), TableSizes: make([]anaTableSize, len(st.Sizes)),
		DeadTuples: make([]anaDeadTuples, len(rep.DeadTuples)), HotUpdates: make([]anaHotUpdates, len(rep.HotUpdates)),
		ActiveQueries: make([]anaActiveQuery, len(st.ActiveQueries)), AutovacuumStatus: make([]anaAutovacuum, len(rep.Autovacuum)),
		Timestamp: resTime(time.Now())}
	for i, c := range rep.Tables {
		out.TableCache[i] = anaCacheOf(c, false)
	}
	for i, c := range rep.Indexes {
		out.IndexCache[i] = anaCacheOf(c, true)
	}
	for _, b := range rep.BufferUsage {
		out.BufferUsage = append(out.BufferUsage, anaBufferUse{Object: b.Object, Buffers: b.Buffers, BufferedBytes: b.Bytes,
			BufferedSize: anaSize(b.Bytes), PercentOfCache: b.Pct})
	}
	for i, s := range st.Sizes {
		out.TableSizes[i] = anaTableSize{Table: s.Table, TotalSize: anaSize(s.TotalBytes), TableSize: anaSize(s.TableBytes),
			IndexSize: anaSize(s.IndexBytes), TotalBytes: s.TotalBytes, TableBytes: s.TableBytes, IndexBytes: s.IndexBytes}
	}
	for i, t := range rep.DeadTuples {
		out.DeadTuples[i] = anaDeadTuples{Table: t.Table, DeadTuples: t.DeadTuples, LiveTuples: t.LiveTuples,
			DeadPercentage: t.DeadPct, LastVacuum: resTimePtr(t.LastVacuum), LastAutovacuum: resTimePtr(t.LastAutovacuum)}
	}
	for i, t := range rep.HotUpdates {
		out.HotUpdates[i] = anaHotUpdates{Table: t.Table, TotalUpdates: t.Updates, HotUpdates: t.TableActivity.HotUpdates,
			HotUpdatePercentage: t.HotPct}
	}
	for i, q := range st.ActiveQueries {
		out.ActiveQueries[i] = anaActiveQuery{PID: q.PID, State: q.State, Duration: anaRound(q.Duration.Seconds(), 3),
			Query: q.Query, WaitEventType: q.WaitEventType, WaitEvent: q.WaitEvent, ApplicationName: q.ApplicationName}
	}
	for i, t := range rep.Autovacuum {
		out.AutovacuumStatus[i] = anaAutovacuum{Table: t.Table, DeadTuples: t.DeadTuples, VacuumThreshold: t.VacuumThreshold,
			AutovacuumCount: t.AutovacuumCount, VacuumCount: t.VacuumCount, AutoanalyzeCount: t.AutoanalyzeCount,
			LastAutovacuum: resTimePtr(t.LastAutovacuum), LastAutoanalyze: resTimePtr(t.LastAutoanalyze)}
	}
	writeJSON(w, http.StatusOK, out)
}
