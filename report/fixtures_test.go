package report

import "github.com/plload/plload/resultfiles/resultstest"

// The golden stages, their records and their report, and the schema validators, come from package
// resultstest, which the tests of results and gate share.
const (
	t0             = resultstest.T0
	hostileMessage = resultstest.HostileMessage
)

var (
	rec            = resultstest.Record
	goldenStages   = resultstest.GoldenStages
	troubledStages = resultstest.TroubledStages
	goldenReport   = resultstest.GoldenReport
	schemas        = resultstest.Schemas
	modeScenario   = resultstest.ModeScenario
	stageOf        = resultstest.ModeStage
	openLoopStage  = resultstest.OpenLoopStage
	validate       = resultstest.Validate
)
