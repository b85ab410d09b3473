// Canton's published TypeScript clients (@canton-network/core-ledger-client,
// core-splice-client, core-wallet-auth; versions pinned in package.json)
// against the sandbox, unchanged: the Go test TestCantonClients starts the
// sandbox and passes its addresses in the environment; each step prints
// one line "ok <case>" or "fail <case>: <error>".
import { generateKeyPairSync, sign } from 'node:crypto'
import { LedgerClient } from '@canton-network/core-ledger-client'
import { ValidatorInternalClient } from '@canton-network/core-splice-client'
import { AuthTokenProvider } from '@canton-network/core-wallet-auth'

const env = (k) => {
    const v = process.env[k]
    if (!v) throw new Error(`${k} is not set`)
    return v
}
const quiet = {
    debug() {}, info() {}, warn() {}, error() {}, trace() {}, fatal() {},
    child() { return quiet },
}

let failed = 0
async function step(name, f) {
    try {
        const detail = await f()
        console.log(`ok ${name}${detail ? ' ' + JSON.stringify(detail) : ''}`)
    } catch (e) {
        failed++
        console.log(`fail ${name}: ${e instanceof Error ? e.message : JSON.stringify(e)}`)
    }
}
const must = (cond, msg) => { if (!cond) throw new Error(msg) }

const auth = new AuthTokenProvider({
    method: 'client_credentials',
    configUrl: env('OIDC_CONFIG_URL'),
    credentials: { clientId: env('CLIENT_ID'), clientSecret: env('CLIENT_SECRET') },
}, quiet)
const v1 = new LedgerClient({ baseUrl: new URL(env('LEDGER_1')), logger: quiet, accessTokenProvider: auth })
const v2 = new LedgerClient({ baseUrl: new URL(env('LEDGER_2')), logger: quiet, accessTokenProvider: auth })

await step('token provider', async () => {
    const ctx = await auth.getAuthContext()
    must(ctx.accessToken.split('.').length === 3, 'not a JWT')
    return { userId: ctx.userId }
})
await step('LedgerClient.init', async () => {
    await v1.init()
    await v2.init()
    return { version: v1.getCurrentClientVersion() }
})
await step('authenticated user', async () => {
    const u = await v1.get('/v2/authenticated-user')
    must(u.user.id === env('OPERATOR_1'), `user ${u.user.id}`)
})

const { publicKey, privateKey } = generateKeyPairSync('ed25519')
const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32)
const sync = await v1.getSynchronizerId()
const cohost = (await v2.get('/v2/parties/participant-id')).participantId
let topology
let request
await step('generateTopology with a raw key', async () => {
    topology = await v1.generateTopology(sync, raw.toString('base64'), 'ts-alice', false, 2, [cohost])
    must(topology.partyId.startsWith('ts-alice::'), topology.partyId)
    return { partyId: topology.partyId }
})
await step('allocateExternalParty', async () => {
    const signature = sign(null, Buffer.from(topology.multiHash, 'base64'), privateKey).toString('base64')
    request = [topology.topologyTransactions.map((transaction) => ({ transaction })), [{
        format: 'SIGNATURE_FORMAT_CONCAT', signature, signedBy: topology.publicKeyFingerprint,
        signingAlgorithmSpec: 'SIGNING_ALGORITHM_SPEC_ED25519',
    }]]
    const r = await v1.allocateExternalParty(sync, ...request)
    must(r.partyId === topology.partyId, r.partyId)
})
await step('allocateExternalParty at the co-host', async () => {
    const r = await v2.allocateExternalParty(sync, ...request)
    must(r.partyId === topology.partyId, r.partyId)
})
await step('checkIfPartyExists', async () => {
    must(await v1.checkIfPartyExists(topology.partyId), 'not at the allocating participant')
    must(await v2.checkIfPartyExists(topology.partyId), 'not at the co-host')
    must(!(await v1.checkIfPartyExists('nobody::1220' + '0'.repeat(64))), 'an unknown party exists')
})
await step('list parties', async () => {
    const r = await v1.get('/v2/parties', { query: { 'filter-party': 'ts-alice' } })
    must(r.partyDetails.length === 1 && r.partyDetails[0].party === topology.partyId, JSON.stringify(r))
})
await step('connected synchronizers', async () => {
    const r = await v2.get('/v2/state/connected-synchronizers', { query: { party: topology.partyId } })
    must(r.connectedSynchronizers[0].permission === 'PARTICIPANT_PERMISSION_CONFIRMATION', JSON.stringify(r))
})
await step('splice validator user', async () => {
    const app = new ValidatorInternalClient(new URL(env('VALIDATOR_APP_1')), quiet, auth)
    const r = await app.get('/v0/validator-user')
    must(r.party_id && r.user_name, JSON.stringify(r))
})
process.exit(failed ? 1 : 0)
