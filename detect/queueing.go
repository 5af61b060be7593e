package detect

// Queueing arithmetic: Little's law and the full-queue waits it gives. Every
// detector, explanation and piece of advice that reasons about workers,
// service time and the listen queue calls these, so the forms are written
// once.

// LittleTime is Little's law solved for the time in the system, W = L / λ:
// held items (busy workers, queued requests) leaving at perS a second each
// stay held / perS seconds. With the busy workers it is PHP's service time;
// with the listen queue's depth it is the queue's wait.
func LittleTime(held, perS float64) float64 {
	return held / perS
}

// LittleHeld is Little's law solved for what is held, L = λ W: perS arrivals
// a second each staying timeS seconds keep perS x timeS busy (the workers a
// load needs).
func LittleHeld(perS, timeS float64) float64 {
	return perS * timeS
}

// LittleRate is Little's law solved for the rate, λ = L / W: held workers each
// taking timeS seconds finish held / timeS requests a second (a pool's
// capacity).
func LittleRate(held, timeS float64) float64 {
	return held / timeS
}

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
