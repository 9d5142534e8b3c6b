// A large download through the TLS edge with curl (no SDK in the data path): one sandbox (made
// through the edge with the npm SDK), a file of MIB MiB made with fallocate (unwritten extents
// read back as zeros without disk I/O, so the figure is the edge's and not the sandbox disk's),
// then RUNS downloads each of GET /files over HTTP/1.1 and over h2 through the edge
// (https://49983-<id>.<domain>, X-Access-Token, Accept-Encoding: identity), and the same over the
// plain-HTTP sandbox listener PLAIN_URL (header routing) for the proxy's non-TLS ceiling.
// curl writes to /dev/null; its speed_download (bytes / total time) is the figure. Each run checks
// the status, the byte count and the negotiated HTTP version. Prints one JSON line (MiB/s).
// Usage: node bench/edge-download.mjs RUNS MIB CA_PEM PLAIN_URL   (E2B_* env: the edge)
import { execFileSync } from 'node:child_process'
import { Sandbox } from '../tests/e2e/node_modules/e2b/dist/index.mjs'

const runs = Number(process.argv[2] ?? 3)
const mib = Number(process.argv[3] ?? 1024)
const ca = process.argv[4]
const plainUrl = process.argv[5]
if (!(runs > 0 && mib > 0 && ca && plainUrl)) throw new Error('usage: edge-download.mjs RUNS MIB CA_PEM PLAIN_URL')
const domain = process.env.E2B_DOMAIN
const path = '/home/user/.cove-bench-big'
const bytes = mib * 1024 * 1024

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

const sbx = await Sandbox.create({ timeoutMs: 900_000 })
try {
  const df = (await sbx.commands.run('df -m --output=size,avail /home/user | tail -n 1')).stdout.trim()
  await sbx.commands.run(`fallocate -l ${bytes} ${path}`)
  const query = `files?path=${encodeURIComponent(path)}&username=user`
  const token = sbx.envdAccessToken
  const curl = (version, url, extra) => {
    const args = ['-sS', '-o', '/dev/null', '-w', '%{http_code} %{size_download} %{speed_download} %{http_version}',
      '-H', 'Accept-Encoding: identity', ...(token ? ['-H', `X-Access-Token: ${token}`] : []), ...extra, url]
    const [code, size, speed, got] = execFileSync('curl', args, { encoding: 'utf8' }).trim().split(' ')
    if (code !== '200' || Number(size) !== bytes || got !== version) {
      throw new Error(`download: status ${code}, ${size} of ${bytes} bytes, HTTP/${got} (wanted ${version})`)
    }
    return Number(speed) / 1024 / 1024
  }
  const edgeUrl = `https://49983-${sbx.sandboxId}.${domain}/${query}`
  const series = (fn) => {
    fn() // warm-up: page cache, connection paths
    const xs = Array.from({ length: runs }, fn)
    return { median: +median(xs).toFixed(1), all: xs.map((x) => +x.toFixed(1)) }
  }
  const h1 = series(() => curl('1.1', edgeUrl, ['--cacert', ca, '--http1.1']))
  const h2 = series(() => curl('2', edgeUrl, ['--cacert', ca, '--http2']))
  const plain = series(() => curl('1.1', `${plainUrl}/${query}`,
    ['-H', `E2b-Sandbox-Id: ${sbx.sandboxId}`, '-H', 'E2b-Sandbox-Port: 49983']))
  await sbx.commands.run(`rm -f ${path}`)
  console.log(JSON.stringify({ runs, mib, disk_size_avail_mb: df, h1_mib_s: h1, h2_mib_s: h2, plain_h1_mib_s: plain }))
} finally {
  await sbx.kill()
}
