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

// LongestQueueWait runs the queue a load builds in front of workers that
// take serviceS seconds a request: arrivals[i] requests come in step i
// (stepS seconds long), the workers finish workers / serviceS a second, and
// what they cannot take waits. It returns the longest wait the queue meant
// (QueueWait of its deepest backlog), the step it was reached in (-1: no
// queue) and the connections a full queue refused. Fluid, first come first
// served: a request in the queue waits as long as the ones before it take,
// whether or not its client stays; so it answers whether this load's queue
// would have drained within a timeout, not what the clients saw. backlog is
// the listen queue's cap (php-fpm's listen.backlog as the kernel applied
// it): a connection arriving at a full queue is refused at once (the proxy
// fails it), never queued, so the queue holds at most backlog and waits at
// most QueueWait(backlog); 0 means the cap is unknown and the queue runs
// unbounded (refusing none).
func LongestQueueWait(arrivals []int, stepS, serviceS, workers, backlog float64) (longest float64, at int, refused float64) {
	at = -1
	if serviceS <= 0 || workers <= 0 || stepS <= 0 {
		return 0, at, 0
	}
	drained := LittleRate(workers, serviceS) * stepS
	queued := 0.0
	for i, a := range arrivals {
		queued = max(queued+float64(a)-drained, 0)
		if backlog > 0 && queued > backlog {
			refused += queued - backlog
			queued = backlog
		}
		if w := QueueWait(queued, serviceS, workers); w > longest {
			longest, at = w, i
		}
	}
	return longest, at, refused
}
