// The "browser" of tests/it/mcp_conformance.rs ($BROWSER): agentloop runs it with the
// authorization URL of a sign-in as its last argument. The conformance suite's authorization
// server approves at once and redirects to agentloop's loopback callback; following that
// redirect, as a browser would, completes the sign-in.
const response = await fetch(process.argv[process.argv.length - 1]);
await response.text();
