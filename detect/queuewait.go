package detect

// QueueWait is the longest wait a full queue means: the last of backlog
// requests waits backlog x serviceS / workers seconds before a worker takes
// it (workers drain the queue at workers / serviceS requests a second). The
// config_change verdicts, the report's explanations and the rules' advice all
// use this one definition.
func QueueWait(backlog, serviceS, workers float64) float64 {
	return backlog * serviceS / workers
}

// DrainableBacklog is the largest backlog whose full queue drains within
// timeout: QueueWait(B, serviceS, workers) <= timeout for B up to
// workers x timeout / serviceS.
func DrainableBacklog(timeout, serviceS, workers float64) float64 {
	return workers * timeout / serviceS
}
