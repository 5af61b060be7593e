package configchange

import "github.com/aftermath-forensics/aftermath/detect"

// What the tests read of package detect besides what the analysis does.
var FactMap = detect.FactMap

var MustParseFacts = detect.MustParseFacts

var QueuedCheckTimeout = detect.QueuedCheckTimeout
