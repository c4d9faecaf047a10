package runner

import "fmt"

// Code is what an error means for the command that returns it: its exit code (README.md).
type Code int

// The codes a run, a search, a comparison or a matrix ends with besides success.
const (
	Failed      Code = 1   // it finished, but something the user asked to be told about failed
	BadInput    Code = 2   // flags, scenario, files, a target the preflight refused; nothing was sent
	Undecided   Code = 3   // the evidence decided nothing (a gate, a search)
	Interrupted Code = 130 // a signal stopped it
)

// Error carries the code an error should end the command with.
type Error struct {
	Code Code
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// badInput is a BadInput error with a formatted message.
func badInput(format string, args ...any) error {
	return &Error{Code: BadInput, Err: fmt.Errorf(format, args...)}
}
