// Environment layering, users and groups, working directory.
// run.sh has sent POST /init with envVars {COVE_E2E_GLOBAL: 'from-init', COVE_E2E_OVERRIDE: 'init'}
// and defaultUser 'user' before this suite starts.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { InvalidArgumentError } from 'e2b'
import { TEST_TIMEOUT, createSandbox, lazy, sh } from './helpers.mjs'

const T = { timeout: TEST_TIMEOUT }
const sandbox = lazy(createSandbox)

describe('environment', () => {
  test('global envVars from /init are visible to commands', T, async () => {
    const sbx = await sandbox()
    assert.equal(await sh(sbx, 'echo "$COVE_E2E_GLOBAL"'), 'from-init')
    assert.equal(await sh(sbx, 'echo "$COVE_E2E_OVERRIDE"'), 'init')
    assert.equal(await sh(sbx, 'echo "$COVE_E2E_GLOBAL"', { user: 'root' }), 'from-init')
  })

  test('request envs override /init envVars and add new ones', T, async () => {
    const sbx = await sandbox()
    const out = await sh(sbx, 'echo "$COVE_E2E_OVERRIDE|$COVE_E2E_GLOBAL|$COVE_E2E_REQUEST_ONLY"', {
      envs: { COVE_E2E_OVERRIDE: 'request', COVE_E2E_REQUEST_ONLY: 'only-here' },
    })
    assert.equal(out, 'request|from-init|only-here')
    // The override is per request: the next command sees the /init value again.
    assert.equal(await sh(sbx, 'echo "$COVE_E2E_OVERRIDE"'), 'init')
  })

  test('default user is `user` with HOME/USER/LOGNAME set', T, async () => {
    const sbx = await sandbox()
    assert.equal(await sh(sbx, 'echo "$HOME|$USER|$LOGNAME"'), '/home/user|user|user')
    assert.equal(await sh(sbx, 'whoami'), 'user')
    assert.equal(await sh(sbx, 'id -u'), '1000')
    assert.equal(await sh(sbx, 'id -g'), '1000')
  })

  test("user: 'root' runs as root with root's HOME/USER/LOGNAME", T, async () => {
    const sbx = await sandbox()
    assert.equal(await sh(sbx, 'echo "$HOME|$USER|$LOGNAME"', { user: 'root' }), '/root|root|root')
    assert.equal(await sh(sbx, 'whoami', { user: 'root' }), 'root')
    assert.equal(await sh(sbx, 'id -u', { user: 'root' }), '0')
  })

  test('supplementary groups of `user` include sudo', T, async () => {
    const sbx = await sandbox()
    const sudoGroup = await sh(sbx, 'getent group sudo')
    const [, , sudoGid, members] = sudoGroup.split(':')
    assert.match(sudoGid, /^\d+$/, `unexpected group entry: ${sudoGroup}`)
    assert.ok(members.split(',').includes('user'), `rootfs problem, not an agent one: user not in ${sudoGroup}`)
    const groups = (await sh(sbx, 'id -G')).split(/\s+/)
    assert.ok(groups.includes(sudoGid), `id -G = ${groups.join(' ')} lacks sudo gid ${sudoGid}`)
    assert.ok(groups.includes('1000'), `id -G = ${groups.join(' ')} lacks the primary gid 1000`)
    const rootGroups = (await sh(sbx, 'id -G', { user: 'root' })).split(/\s+/)
    assert.ok(!rootGroups.includes('1000'), `root must not inherit user's groups: ${rootGroups.join(' ')}`)
  })

  test('PATH is set and finds the usual binaries', T, async () => {
    const sbx = await sandbox()
    for (const user of [undefined, 'root']) {
      const out = await sh(sbx, 'echo "$PATH"; command -v ls', { user })
      const [path, ls] = out.split('\n')
      assert.ok(path.split(':').includes('/usr/bin'), `PATH for ${user ?? 'default user'}: ${path}`)
      assert.match(ls, /^\/(usr\/)?bin\/ls$/)
    }
  })
})

describe('working directory', () => {
  test('cwd option sets the working directory', T, async () => {
    const sbx = await sandbox()
    assert.equal(await sh(sbx, 'pwd', { cwd: '/tmp' }), '/tmp')
    assert.equal(await sh(sbx, 'pwd', { cwd: '/usr/share' }), '/usr/share')
  })

  test('without cwd a command starts in the user home', T, async () => {
    const sbx = await sandbox()
    assert.equal(await sh(sbx, 'pwd'), '/home/user')
    assert.equal(await sh(sbx, 'pwd', { user: 'root' }), '/root')
  })

  test('relative cwd and relative command paths resolve under home', T, async () => {
    const sbx = await sandbox()
    await sh(sbx, 'rm -rf cove-e2e-rel && mkdir -p cove-e2e-rel/sub')
    assert.equal(await sh(sbx, 'pwd', { cwd: 'cove-e2e-rel/sub' }), '/home/user/cove-e2e-rel/sub')
    assert.equal(await sh(sbx, 'pwd', { cwd: 'cove-e2e-rel/sub/..' }), '/home/user/cove-e2e-rel')

    // A script written by a relative path lands in home and runs by a relative path.
    await sh(sbx, "printf '#!/bin/sh\\necho script-ran-in-$(pwd)\\n' > cove-e2e-rel/run.sh && chmod +x cove-e2e-rel/run.sh")
    assert.equal(await sh(sbx, 'test -x /home/user/cove-e2e-rel/run.sh && echo yes'), 'yes')
    assert.equal(await sh(sbx, './cove-e2e-rel/run.sh'), 'script-ran-in-/home/user')
    assert.equal(await sh(sbx, './run.sh', { cwd: 'cove-e2e-rel' }), 'script-ran-in-/home/user/cove-e2e-rel')

    // For root, relative cwd resolves under /root.
    await sh(sbx, 'mkdir -p cove-e2e-root-rel', { user: 'root' })
    assert.equal(await sh(sbx, 'pwd', { user: 'root', cwd: 'cove-e2e-root-rel' }), '/root/cove-e2e-root-rel')
    await sh(sbx, 'rm -rf /home/user/cove-e2e-rel /root/cove-e2e-root-rel', { user: 'root' })
  })

  test('a missing cwd rejects with InvalidArgumentError', T, async () => {
    const sbx = await sandbox()
    const err = await sbx.commands.run('pwd', { cwd: '/definitely/missing/dir-xyz' }).then(
      () => assert.fail('expected InvalidArgumentError'),
      (e) => e,
    )
    assert.ok(err instanceof InvalidArgumentError, `got ${err?.name}: ${err?.message}`)
    assert.match(err.message, /\/definitely\/missing\/dir-xyz/)
  })
})
