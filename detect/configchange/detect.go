package configchange

import (
	"github.com/aftermath-forensics/aftermath/detect"
)

// The vocabulary of package detect this package reads, under the names the
// analysis was written with while it lived there: it registers as one more
// detector and speaks detect's types, so its files keep their text.

type (
	Check                         = detect.Check
	Detector                      = detect.Detector
	Event                         = detect.Event
	Evidence                      = detect.Evidence
	Facts                         = detect.Facts
	Finding                       = detect.Finding
	HealthcheckFacts              = detect.HealthcheckFacts
	Histogram                     = detect.Histogram
	Kind                          = detect.Kind
	Maybe[T float64 | int | bool] = detect.Maybe[T]
	Minute                        = detect.Minute
	MinuteFailures                = detect.MinuteFailures
	Moment                        = detect.Moment
	Outcome                       = detect.Outcome
	Phraser                       = detect.Phraser
	Pool                          = detect.Pool
	Role                          = detect.Role
	ScanMeasure                   = detect.ScanMeasure
	SeriesPoint                   = detect.SeriesPoint
	Spec                          = detect.Spec
	Story                         = detect.Story
	Traffic                       = detect.Traffic
	WorkerSaturationFacts         = detect.WorkerSaturationFacts
)

const (
	AnomalyInfo = detect.AnomalyInfo

	KindCacheCollapse         = detect.KindCacheCollapse
	KindClientAbandonedWork   = detect.KindClientAbandonedWork
	KindConfigChange          = detect.KindConfigChange
	KindCrawlerBurst          = detect.KindCrawlerBurst
	KindHealthcheckStarved    = detect.KindHealthcheckStarved
	KindIdlePinning           = detect.KindIdlePinning
	KindListenQueueOverflow   = detect.KindListenQueueOverflow
	KindSelfAmplification     = detect.KindSelfAmplification
	KindServiceTimeRegression = detect.KindServiceTimeRegression
	KindUpstreamErrors        = detect.KindUpstreamErrors
	KindWorkerSaturation      = detect.KindWorkerSaturation

	OutcomeCouldNotRun    = detect.OutcomeCouldNotRun
	OutcomeFound          = detect.OutcomeFound
	OutcomeNotInteresting = detect.OutcomeNotInteresting

	RoleCandidate  = detect.RoleCandidate
	RoleContext    = detect.RoleContext
	RoleEnabler    = detect.RoleEnabler
	RoleMechanism  = detect.RoleMechanism
	RoleMitigation = detect.RoleMitigation
	RoleRuledOut   = detect.RoleRuledOut
	RoleSymptom    = detect.RoleSymptom
	RoleTrigger    = detect.RoleTrigger

	minServiceSamples = detect.MinServiceSamples
	arrivalsFlat      = detect.ArrivalsFlat
)

var (
	Because      = detect.Because
	CheckTimeout = detect.CheckTimeout
	FormatInt    = detect.FormatInt
	LittleHeld   = detect.LittleHeld
	LittleRate   = detect.LittleRate
	Messages     = detect.Messages
	NewFacts     = detect.NewFacts
	QueueWait    = detect.QueueWait
	Register     = detect.Register

	clampUnit   = detect.ClampUnit
	changeWhen  = detect.ChangeWhen
	joinKinds   = detect.JoinKinds
	later       = detect.Later
	poolSize    = detect.PoolSize
	round       = detect.Round
	serviceTime = detect.ServiceTime
	spanText    = detect.SpanText
	specRole    = detect.SpecRole
)

// Some is a measured fact (detect.Some).
func Some[T float64 | int | bool](v T) Maybe[T] { return detect.Some(v) }

// FactsOf returns f's facts as the struct of kind P points to (detect.FactsOf).
func FactsOf[T any, P interface {
	*T
	Facts
}](f *Finding) P {
	return detect.FactsOf[T, P](f)
}

func first(fs []Finding, kind Kind) *Finding { return detect.First(fs, kind) }

var (
	between    = detect.Between
	peak       = detect.Peak
	rollingMax = detect.RollingMax
)

func init() {
	// listen_queue_overflow's explanation reads a config_change finding's
	// old backlog as the mechanism table reads it.
	detect.ChangedValues = ChangedValues
}
