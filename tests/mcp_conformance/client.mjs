// The client command tests/it/mcp_conformance.rs gives the MCP conformance suite:
//
//   node client.mjs AGENTLOOP [agentloop mcp arguments...] URL
//
// runs `AGENTLOOP mcp` with the options a user would give for the scenario's server. The
// suite generates some credentials per run and passes them in MCP_CONFORMANCE_CONTEXT
// (JSON); they become agentloop's own options: `client_id` → --client-id, `client_secret` →
// $MCP_CLIENT_SECRET, `private_key_pem` → a 0600 key file for --client-key, and the identity
// provider of a cross-app sign-in → --xaa-idp/--xaa-idp-client-id with the ID token in
// $MCP_XAA_ID_TOKEN. The exit status is agentloop's.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [agentloop, ...args] = process.argv.slice(2);
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}');
const env = { ...process.env };
delete env.MCP_CONFORMANCE_CONTEXT;
const options = [];
let keyDir;
if (context.client_id) options.push('--client-id', context.client_id);
if (context.client_secret) env.MCP_CLIENT_SECRET = context.client_secret;
if (context.private_key_pem) {
  keyDir = mkdtempSync(join(tmpdir(), 'agentloop-conformance-'));
  const key = join(keyDir, 'client-key.pem');
  writeFileSync(key, context.private_key_pem, { mode: 0o600 });
  options.push('--client-key', key);
}
if (context.idp_issuer) {
  options.push('--xaa-idp', context.idp_issuer, '--xaa-idp-client-id', context.idp_client_id);
  env.MCP_XAA_ID_TOKEN = context.idp_id_token;
}
const run = spawnSync(agentloop, ['mcp', ...options, ...args], { stdio: 'inherit', env });
if (keyDir) rmSync(keyDir, { recursive: true, force: true });
process.exit(run.status ?? 1);
