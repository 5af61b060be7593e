package scan

// The tests judge findings of every kind the program registers; analysis
// registers config_change by importing its detector, and the scan's tests
// no longer link analysis (the week's replay is analysis's test).
import _ "github.com/aftermath-forensics/aftermath/detect/configchange"
