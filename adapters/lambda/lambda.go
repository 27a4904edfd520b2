package lambda

import (
	"context"
	"encoding/json"
	"os"
	"time"

	awslambda "github.com/aws/aws-lambda-go/lambda"

	"github.com/queen-go/queen/core/drain"
)

// Margin is the least time an invocation keeps before its deadline: closing the spool
// and answering must fit in it (seconds, with a slow network file system in mind). A
// bundle in flight may take up to the statement timeout, so the margin grows to that
// plus Margin when the invocation is long enough to afford it.
const Margin = 10 * time.Second

// Running reports whether the process was started by the Lambda runtime.
func Running() bool { return os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" }

// Budget is the instant an invocation whose context is ctx stops draining: Margin (or
// statementTimeout + Margin, when that is under half the time left) before the
// invocation's deadline; a context without one gets a minute.
func Budget(ctx context.Context, statementTimeout time.Duration) time.Time {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	margin := Margin
	if m := statementTimeout + Margin; m < time.Until(deadline)/2 {
		margin = m
	}
	return deadline.Add(-margin)
}

// Handler is one invocation of the drain job over dirs: drain until Budget, answer the
// summary. The scheduled event's content (an EventBridge "Scheduled Event", or any JSON)
// carries nothing the job needs.
func Handler(job *drain.Job, dirs []string, statementTimeout time.Duration) func(ctx context.Context, event json.RawMessage) (any, error) {
	return func(ctx context.Context, _ json.RawMessage) (any, error) {
		return job.Run(ctx, dirs, Budget(ctx, statementTimeout))
	}
}

// Serve answers invocations with Handler until the runtime stops the process.
func Serve(job *drain.Job, dirs []string, statementTimeout time.Duration) {
	awslambda.Start(Handler(job, dirs, statementTimeout))
}
