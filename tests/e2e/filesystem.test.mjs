// The filesystem.Filesystem service through the e2b SDK: list (depth), exists, getInfo of files,
// directories and symlinks, makeDir, rename and remove, per user. Fixtures are made with commands so
// only the RPC under test is trusted.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { AuthenticationError, FileNotFoundError, InvalidArgumentError } from 'e2b'
import { TEST_TIMEOUT, createSandbox, lazy, sh } from './helpers.mjs'

const T = { timeout: TEST_TIMEOUT }
const sandbox = lazy(createSandbox)

/** [path, type] of list entries, sorted by path. */
const summary = (entries) => entries.map((e) => [e.path, e.type]).sort((a, b) => (a[0] < b[0] ? -1 : 1))

/**
 * /home/user/cove-list:  a/a.txt  a/b/b.txt  a/b/c/deep.txt  top.txt  link -> top.txt  dirlink -> a
 */
async function makeTree(sbx, dir) {
  await sh(
    sbx,
    [
      `rm -rf ${dir} && mkdir -p ${dir}/a/b/c`,
      `cd ${dir} && echo top > top.txt && echo a > a/a.txt && echo b > a/b/b.txt && echo deep > a/b/c/deep.txt`,
      'ln -s top.txt link && ln -s a dirlink',
    ].join(' && '),
  )
}

describe('filesystem', () => {
  test('list: depth 1 (default) and 3, symlinks listed but not followed, errors', T, async () => {
    const sbx = await sandbox()
    const d = '/home/user/cove-list'
    await makeTree(sbx, d)

    const one = await sbx.files.list(d)
    assert.deepEqual(summary(one), [
      [`${d}/a`, 'dir'],
      [`${d}/dirlink`, 'dir'], // a symlink reports its target's type
      [`${d}/link`, 'file'],
      [`${d}/top.txt`, 'file'],
    ])
    assert.deepEqual(summary(await sbx.files.list(d, { depth: 1 })), summary(one))
    const top = one.find((e) => e.name === 'top.txt')
    assert.equal(top.size, 4)
    assert.equal(top.owner, 'user')

    const three = await sbx.files.list(d, { depth: 3 })
    assert.deepEqual(summary(three), [
      [`${d}/a`, 'dir'],
      [`${d}/a/a.txt`, 'file'],
      [`${d}/a/b`, 'dir'],
      [`${d}/a/b/b.txt`, 'file'],
      [`${d}/a/b/c`, 'dir'],
      [`${d}/dirlink`, 'dir'],
      [`${d}/link`, 'file'],
      [`${d}/top.txt`, 'file'],
    ])
    assert.deepEqual(three.find((e) => e.path === `${d}/a/b/c`).name, 'c')

    // Relative paths resolve against the user's home; a symlinked base keeps the requested path.
    assert.deepEqual(summary(await sbx.files.list('cove-list')), summary(one))
    assert.deepEqual(summary(await sbx.files.list(`${d}/dirlink`)), [
      [`${d}/dirlink/a.txt`, 'file'],
      [`${d}/dirlink/b`, 'dir'],
    ])

    await assert.rejects(sbx.files.list(`${d}/missing`), (e) => {
      assert.ok(e instanceof FileNotFoundError, `${e?.name}: ${e?.message}`)
      return true
    })
    await assert.rejects(sbx.files.list(`${d}/top.txt`), (e) => {
      assert.ok(e instanceof InvalidArgumentError, `${e?.name}: ${e?.message}`)
      assert.match(e.message, /path is not a directory: \/home\/user\/cove-list\/top.txt/)
      return true
    })
  })

  test('exists: files, directories, FIFOs and dangling symlinks exist; missing paths do not', T, async () => {
    const sbx = await sandbox()
    await sh(sbx, 'rm -rf /home/user/cove-ex && mkdir -p /home/user/cove-ex/d && touch /home/user/cove-ex/f && ln -s nowhere /home/user/cove-ex/dangling && mkfifo /home/user/cove-ex/fifo')
    assert.equal(await sbx.files.exists('/home/user/cove-ex/f'), true)
    assert.equal(await sbx.files.exists('/home/user/cove-ex/d'), true)
    assert.equal(await sbx.files.exists('cove-ex/d'), true)
    assert.equal(await sbx.files.exists('/home/user/cove-ex/dangling'), true)
    assert.equal(await sbx.files.exists('/home/user/cove-ex/missing'), false)
    assert.equal(await sbx.files.exists('/home/user/cove-ex/missing/deeper'), false)
    // A FIFO exists but has no SDK type (FILE_TYPE_UNSPECIFIED), so list() leaves it out.
    assert.equal(await sbx.files.exists('/home/user/cove-ex/fifo'), true)
    const fifo = await sbx.files.getInfo('/home/user/cove-ex/fifo')
    assert.equal(fifo.type, undefined)
    assert.match(fifo.permissions, /^prw-/)
    assert.deepEqual((await sbx.files.list('/home/user/cove-ex')).map((e) => e.name).sort(), ['d', 'f'])
  })

  test('getInfo of a file: every field', T, async () => {
    const sbx = await sandbox()
    const path = '/home/user/cove-info/file.txt'
    await sh(sbx, `rm -rf /home/user/cove-info && mkdir -p /home/user/cove-info && printf 12345 > ${path} && chmod 640 ${path} && touch -d '2024-01-02T03:04:05.123456789Z' ${path}`)
    const info = await sbx.files.getInfo(path)
    assert.equal(info.name, 'file.txt')
    assert.equal(info.type, 'file')
    assert.equal(info.path, path)
    assert.equal(info.size, 5)
    assert.equal(info.mode, 0o640)
    assert.equal(info.permissions, '-rw-r-----')
    assert.equal(info.owner, 'user')
    assert.equal(info.group, 'user')
    assert.ok(info.modifiedTime instanceof Date)
    assert.equal(info.modifiedTime.toISOString(), '2024-01-02T03:04:05.123Z')
    assert.equal(info.symlinkTarget, undefined)
    assert.equal(info.metadata, undefined)

    await assert.rejects(sbx.files.getInfo('/home/user/cove-info/missing'), (e) => {
      assert.ok(e instanceof FileNotFoundError, `${e?.name}: ${e?.message}`)
      assert.match(e.message, /file not found/)
      return true
    })
  })

  test('getInfo of directories: type, mode without the sticky bit, Go-style permissions', T, async () => {
    const sbx = await sandbox()
    const dir = await sbx.files.getInfo('/home/user')
    assert.equal(dir.name, 'user')
    assert.equal(dir.type, 'dir')
    assert.equal(dir.path, '/home/user')
    assert.equal(dir.owner, 'user')
    const perms = await sh(sbx, 'stat -c %a /home/user')
    assert.equal(dir.mode, parseInt(perms, 8))

    const tmp = await sbx.files.getInfo('/tmp')
    assert.equal(tmp.type, 'dir')
    assert.equal(tmp.mode, 0o777)
    assert.equal(tmp.permissions, 'dtrwxrwxrwx')
    assert.equal(tmp.owner, 'root')
    assert.equal(tmp.group, 'root')

    await sh(sbx, 'mkdir -p /home/user/cove-info-dir && chmod 755 /home/user/cove-info-dir')
    const d = await sbx.files.getInfo('cove-info-dir')
    assert.equal(d.path, '/home/user/cove-info-dir')
    assert.equal(d.permissions, 'drwxr-xr-x')
    assert.equal(d.mode, 0o755)
  })

  test('getInfo of symlinks: target type, resolved target path, link size and L permissions', T, async () => {
    const sbx = await sandbox()
    const d = '/home/user/cove-links'
    await sh(sbx, `rm -rf ${d} && mkdir -p ${d}/real && printf hello > ${d}/real/f.txt && chmod 600 ${d}/real/f.txt && cd ${d} && ln -s real/f.txt flink && ln -s real dlink && ln -s dlink/f.txt chain && ln -s missing dangling`)

    const f = await sbx.files.getInfo(`${d}/flink`)
    assert.equal(f.name, 'flink')
    assert.equal(f.type, 'file')
    assert.equal(f.path, `${d}/flink`)
    assert.equal(f.symlinkTarget, `${d}/real/f.txt`)
    assert.equal(f.size, 'real/f.txt'.length)
    assert.equal(f.mode, 0o600)
    assert.equal(f.permissions, 'Lrwxrwxrwx')

    const dl = await sbx.files.getInfo(`${d}/dlink`)
    assert.equal(dl.type, 'dir')
    assert.equal(dl.symlinkTarget, `${d}/real`)

    const chain = await sbx.files.getInfo(`${d}/chain`)
    assert.equal(chain.type, 'file')
    assert.equal(chain.symlinkTarget, `${d}/real/f.txt`) // fully resolved, not readlink

    const dangling = await sbx.files.getInfo(`${d}/dangling`)
    assert.equal(dangling.name, 'dangling')
    assert.equal(dangling.type, undefined) // FILE_TYPE_UNSPECIFIED
    assert.equal(dangling.symlinkTarget, `${d}/dangling`)
  })

  test('makeDir: creates parents, owned by the user; twice → false; over a file → InvalidArgumentError', T, async () => {
    const sbx = await sandbox()
    await sh(sbx, 'rm -rf /home/user/cove-mk')
    assert.equal(await sbx.files.makeDir('/home/user/cove-mk/x/y'), true)
    assert.equal(await sbx.files.makeDir('/home/user/cove-mk/x/y'), false)
    assert.equal(await sbx.files.makeDir('cove-mk/x'), false)
    assert.equal(await sbx.files.makeDir('cove-mk/rel'), true)
    assert.equal(
      await sh(sbx, 'stat -c %F:%U:%G:%a /home/user/cove-mk /home/user/cove-mk/x /home/user/cove-mk/x/y /home/user/cove-mk/rel'),
      Array(4).fill('directory:user:user:755').join('\n'),
    )
    await sh(sbx, 'touch /home/user/cove-mk/file')
    await assert.rejects(sbx.files.makeDir('/home/user/cove-mk/file'), (e) => {
      assert.ok(e instanceof InvalidArgumentError, `${e?.name}: ${e?.message}`)
      assert.match(e.message, /path already exists but it is not a directory/)
      return true
    })

    await sh(sbx, 'rm -rf /root/cove-mk-root', { user: 'root' })
    assert.equal(await sbx.files.makeDir('cove-mk-root/sub', { user: 'root' }), true)
    assert.equal(await sh(sbx, 'stat -c %U:%G /root/cove-mk-root /root/cove-mk-root/sub', { user: 'root' }), 'root:root\nroot:root')
    const info = await sbx.files.getInfo('/root/cove-mk-root/sub', { user: 'root' })
    assert.equal(info.owner, 'root')
    assert.equal(info.type, 'dir')
  })

  test('rename: files and directories, into new parents, over an existing file; missing source', T, async () => {
    const sbx = await sandbox()
    const d = '/home/user/cove-mv'
    await sh(sbx, `rm -rf ${d} && mkdir -p ${d}/dir && printf moved > ${d}/a.txt && printf inner > ${d}/dir/i.txt && printf old > ${d}/existing.txt`)

    const moved = await sbx.files.rename(`${d}/a.txt`, `${d}/new/parent/b.txt`)
    assert.equal(moved.name, 'b.txt')
    assert.equal(moved.type, 'file')
    assert.equal(moved.path, `${d}/new/parent/b.txt`)
    assert.equal(moved.size, 5)
    assert.equal(await sh(sbx, `cat ${d}/new/parent/b.txt; test -e ${d}/a.txt && echo still-there || true`), 'moved')
    assert.equal(await sh(sbx, `stat -c %U ${d}/new ${d}/new/parent`), 'user\nuser')

    const dir = await sbx.files.rename('cove-mv/dir', 'cove-mv/dir2')
    assert.equal(dir.type, 'dir')
    assert.equal(dir.path, `${d}/dir2`)
    assert.equal(await sh(sbx, `cat ${d}/dir2/i.txt`), 'inner')

    await sbx.files.rename(`${d}/new/parent/b.txt`, `${d}/existing.txt`)
    assert.equal(await sh(sbx, `cat ${d}/existing.txt`), 'moved')

    await assert.rejects(sbx.files.rename(`${d}/missing`, `${d}/x`), (e) => {
      assert.ok(e instanceof FileNotFoundError, `${e?.name}: ${e?.message}`)
      assert.match(e.message, /source file not found/)
      return true
    })
  })

  test('remove: a file, a directory tree, and again without error', T, async () => {
    const sbx = await sandbox()
    const d = '/home/user/cove-rm'
    await sh(sbx, `rm -rf ${d} && mkdir -p ${d}/tree/a/b && touch ${d}/f ${d}/tree/a/b/c && ln -s /etc ${d}/tree/etc-link`)
    await sbx.files.remove(`${d}/f`)
    assert.equal(await sbx.files.exists(`${d}/f`), false)
    await sbx.files.remove('cove-rm/tree')
    assert.equal(await sh(sbx, `ls -A ${d}`), '')
    assert.equal(await sh(sbx, 'test -d /etc && echo kept'), 'kept') // symlinks inside are not followed
    await sbx.files.remove(`${d}/f`)
    await sbx.files.remove(`${d}/tree`)
    await sbx.files.remove('/home/user/cove-rm/never/existed')
  })

  test('an unknown user is refused with AuthenticationError', T, async () => {
    const sbx = await sandbox()
    await assert.rejects(sbx.files.list('/tmp', { user: 'cove-no-such-user' }), (e) => {
      assert.ok(e instanceof AuthenticationError, `${e?.name}: ${e?.message}`)
      assert.match(e.message, /invalid username: 'cove-no-such-user'/)
      return true
    })
    await assert.rejects(sbx.files.makeDir('/tmp/cove-nobody', { user: 'cove-no-such-user' }), AuthenticationError)
    assert.equal(await sh(sbx, 'test -e /tmp/cove-nobody && echo exists || echo absent'), 'absent')
  })
})
