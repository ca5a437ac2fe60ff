package wire

// QueryStats is the "stats" object of a Presto/Trino query answer: what a
// client shows as progress, and what the coordinator simulator writes.
type QueryStats struct {
	State              string   `json:"state"`
	Queued             bool     `json:"queued"`
	Scheduled          bool     `json:"scheduled"`
	Nodes              int      `json:"nodes"`
	TotalSplits        int      `json:"totalSplits"`
	QueuedSplits       int      `json:"queuedSplits"`
	RunningSplits      int      `json:"runningSplits"`
	CompletedSplits    int      `json:"completedSplits"`
	CPUTimeMillis      int64    `json:"cpuTimeMillis"`
	WallTimeMillis     int64    `json:"wallTimeMillis"`
	QueuedTimeMillis   int64    `json:"queuedTimeMillis"`
	ElapsedTimeMillis  int64    `json:"elapsedTimeMillis"`
	ProcessedRows      int64    `json:"processedRows"`
	ProcessedBytes     int64    `json:"processedBytes"`
	PeakMemoryBytes    int64    `json:"peakMemoryBytes"`
	ProgressPercentage *float64 `json:"progressPercentage,omitempty"` // absent until the coordinator knows it
}
