package lambda

import (
	"context"
	"encoding/json"
	"os"

	awslambda "github.com/aws/aws-lambda-go/lambda"
)

// Job is one invocation's work: ctx carries the invocation deadline.
type Job func(ctx context.Context) (any, error)

// Running reports whether the process was started by the Lambda runtime.
func Running() bool { return os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" }

// Handler adapts job to the Lambda handler signature. The scheduled event's content
// (an EventBridge "Scheduled Event", or any JSON) carries nothing the job needs.
func Handler(job Job) func(ctx context.Context, event json.RawMessage) (any, error) {
	return func(ctx context.Context, _ json.RawMessage) (any, error) { return job(ctx) }
}

// Start serves invocations with job until the runtime stops the process.
func Start(job Job) { awslambda.Start(Handler(job)) }
