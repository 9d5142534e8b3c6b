'use strict';
// Cove's JavaScript/TypeScript REPL driver (started by interpreter/node_repl_kernel.cpp as
// `node repl.js <javascript|typescript>`).
//
// User code's output goes to fd 1/2 untouched; the agent talks to this driver over dedicated
// pipes so nothing the user prints can be mistaken for protocol: requests arrive on fd 3 and
// replies leave on fd 4, one JSON object per line. Replies are written synchronously, as Node
// writes stdout/stderr pipes on Linux, so everything a cell printed is in its pipe before its
// "done" is.
//
//   request: {"id": n, "code": "...", "silent": bool}
//   replies: {"type": "ready"} | {"type": "fatal", "message"}
//            {"type": "result", "id", "data": {mime: value}}
//            {"type": "error", "id", "name", "value", "traceback"}
//            {"type": "done", "id"}
//
// Cells run as scripts in this realm (like ijavascript), so top-level declarations persist. A
// cell with top-level `await` is rewritten (declarations hoisted to the global scope, the rest in
// an async function). SIGINT stops a running script (vm breakOnSigint) or abandons a pending await.

const fs = require('fs');
const net = require('net');
const path = require('path');
const util = require('util');
const vm = require('vm');
const Module = require('module');

const REQUESTS_FD = 3;
const REPLIES_FD = 4;
const language = process.argv[2] === 'typescript' ? 'typescript' : 'javascript';

function reply(message) {
  const bytes = Buffer.from(JSON.stringify(message) + '\n', 'utf8');
  let off = 0;
  while (off < bytes.length) off += fs.writeSync(REPLIES_FD, bytes, off, bytes.length - off);
}

// --- TypeScript (optional: Debian's node-typescript lives outside Node's default search path) ---
let typescript;
function loadTypeScript() {
  if (typescript !== undefined) return typescript;
  typescript = null;
  const attempts = [
    () => Module.createRequire(path.join(process.cwd(), '<repl>'))('typescript'),
    () => require('typescript'),
    () => require('/usr/share/nodejs/typescript'),
    () => require('/usr/lib/node_modules/typescript'),
  ];
  for (const attempt of attempts) {
    try {
      typescript = attempt();
      break;
    } catch (_) {
      // try the next location
    }
  }
  return typescript;
}

function transpile(code) {
  const ts = loadTypeScript();
  const out = ts.transpileModule(code, {
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.CommonJS,
      esModuleInterop: true,
    },
    reportDiagnostics: true,
    fileName: 'cell.ts',
  });
  const errors = (out.diagnostics || []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) {
    const d = errors[0];
    let where = '';
    if (d.file && d.start !== undefined) {
      const pos = d.file.getLineAndCharacterOfPosition(d.start);
      where = ` (${pos.line + 1}:${pos.character + 1})`;
    }
    throw new SyntaxError(ts.flattenDiagnosticMessageText(d.messageText, '\n') + where);
  }
  return out.outputText;
}

// --- Top-level await: rewrite a cell so its declarations outlive the async function ---
function isFunctionBoundary(ts, node) {
  return ts.isFunctionLike(node) || ts.isClassLike(node);
}

function hasTopLevelAwait(ts, root) {
  let found = false;
  const visit = (node) => {
    if (found) return;
    if (ts.isAwaitExpression(node) || (ts.isForOfStatement(node) && node.awaitModifier)) {
      found = true;
      return;
    }
    if (isFunctionBoundary(ts, node)) return;
    ts.forEachChild(node, visit);
  };
  ts.forEachChild(root, visit);
  return found;
}

function bindingNames(ts, name, out) {
  if (ts.isIdentifier(name)) {
    out.push(name.text);
    return;
  }
  for (const element of name.elements) {
    if (!ts.isOmittedExpression(element)) bindingNames(ts, element.name, out);
  }
}

// Returns {prelude, body} (two scripts) or null when the cell has no top-level await.
function rewriteTopLevelAwait(code) {
  const ts = loadTypeScript();
  if (!ts) {
    // Without a parser the cell still runs, but its declarations stay local to it.
    return { prelude: '', body: `(async () => {\n${code}\n})()` };
  }
  const file = ts.createSourceFile('cell.js', code, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  if (!hasTopLevelAwait(ts, file)) return null;
  const lexical = [];
  const vars = [];
  const functions = [];
  let body = '';
  let last = 0;
  const statements = file.statements;
  statements.forEach((statement, index) => {
    const start = statement.getStart(file);
    body += code.slice(last, start);
    last = statement.end;
    const text = code.slice(start, statement.end);
    if (ts.isVariableStatement(statement)) {
      const list = statement.declarationList;
      const isVar = (list.flags & (ts.NodeFlags.Let | ts.NodeFlags.Const)) === 0;
      const assignments = [];
      for (const decl of list.declarations) {
        bindingNames(ts, decl.name, isVar ? vars : lexical);
        const target = code.slice(decl.name.getStart(file), decl.name.end);
        if (decl.initializer) {
          const init = code.slice(decl.initializer.getStart(file), decl.initializer.end);
          assignments.push(`(${target} = ${init})`);
        }
      }
      body += assignments.length ? `void (${assignments.join(', ')});` : ';';
    } else if (ts.isFunctionDeclaration(statement) && statement.name && statement.body) {
      // Declarations are hoisted: assign them before anything else in the cell runs.
      vars.push(statement.name.text);
      functions.push(`${statement.name.text} = ${text};\n`);
      body += ';';
    } else if (ts.isClassDeclaration(statement) && statement.name) {
      lexical.push(statement.name.text);
      body += `${statement.name.text} = ${text};`;
    } else if (index === statements.length - 1 && ts.isExpressionStatement(statement)) {
      const expr = code.slice(statement.expression.getStart(file), statement.expression.end);
      body += `return (${expr}\n);`;
    } else {
      body += text;
    }
  });
  body += code.slice(last);
  let prelude = '';
  if (lexical.length) prelude += `let ${lexical.join(', ')};\n`;
  if (vars.length) prelude += `var ${vars.join(', ')};\n`;
  return { prelude, body: `(async () => {\n${functions.join('')}${body}\n})()` };
}

// --- Evaluation ---
let cellCounter = 0;

function runScript(code, filename) {
  const script = new vm.Script(code, { filename });
  return script.runInThisContext({ breakOnSigint: true, displayErrors: false });
}

// Runs the synchronous part of a cell; the value may be a promise still to be awaited.
function evaluate(code) {
  const filename = `cell[${++cellCounter}]`;
  let script;
  try {
    script = new vm.Script(code, { filename });
  } catch (error) {
    if (!(error instanceof SyntaxError) || !/\bawait\b/.test(code)) throw error;
    let rewritten;
    try {
      rewritten = rewriteTopLevelAwait(code);
    } catch (_) {
      rewritten = null;
    }
    if (!rewritten) throw error;
    let body;
    try {
      body = new vm.Script(rewritten.body, { filename });
      if (rewritten.prelude) new vm.Script(rewritten.prelude, { filename });
    } catch (_) {
      throw error;  // the original message is the one the user can act on
    }
    if (rewritten.prelude) runScript(rewritten.prelude, filename);
    return body.runInThisContext({ breakOnSigint: true, displayErrors: false });
  }
  return script.runInThisContext({ breakOnSigint: true, displayErrors: false });
}

function isThenable(value) {
  return value !== null && (typeof value === 'object' || typeof value === 'function') &&
         typeof value.then === 'function';
}

class Interrupted extends Error {
  constructor() {
    super('Execution interrupted');
    this.name = 'KeyboardInterrupt';
  }
}

// Driver frames say nothing to the user: keep the stack up to the first of them.
function userStack(error) {
  const stack = typeof error.stack === 'string' ? error.stack : `${error.name}: ${error.message}`;
  const lines = stack.split('\n');
  const cut = lines.findIndex((line) => line.includes(__filename) || line.includes('node:vm:'));
  return (cut > 0 ? lines.slice(0, cut) : lines).join('\n');
}

function describeError(error) {
  if (error instanceof Interrupted ||
      (error && error.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED')) {
    return { name: 'KeyboardInterrupt', value: 'Execution interrupted', traceback: '' };
  }
  if (error instanceof Error || (error && typeof error === 'object' && 'message' in error)) {
    return {
      name: String(error.name || 'Error'),
      value: String(error.message),
      traceback: userStack(error),
    };
  }
  // `throw 'text'` and friends.
  return { name: 'Error', value: util.inspect(error), traceback: '' };
}

let current = null;  // the cell the agent is waiting for

// A write to a pipe is synchronous only while it fits: the rest waits in Node's buffer. A
// zero-length write's callback runs once everything before it is in the pipe, so the agent,
// which reads the pipes before it believes "done", gets all of a cell's output.
function flushed(stream) {
  return new Promise((resolve) => {
    if (!stream.writable || stream.writableLength === 0) return resolve();
    stream.write('', () => resolve());
  });
}
function flushOutput() {
  return Promise.all([flushed(process.stdout), flushed(process.stderr)]);
}

async function runCell(request) {
  const cell = { id: request.id, finished: false, interrupt: null };
  current = cell;
  const finish = async (message) => {
    if (cell.finished) return;
    cell.finished = true;
    await flushOutput();
    if (message) reply(message);
    reply({ type: 'done', id: cell.id });
    if (current === cell) current = null;
  };
  try {
    const code = language === 'typescript' ? transpile(String(request.code)) : String(request.code);
    let value = evaluate(code);
    if (isThenable(value)) {
      const interrupted = new Promise((_, reject) => {
        cell.interrupt = () => reject(new Interrupted());
      });
      value = await Promise.race([value, interrupted]);
    }
    if (cell.finished) return;  // abandoned by an interrupt
    const show = value !== undefined && !request.silent;
    await finish(show ? { type: 'result', id: cell.id, data: { 'text/plain': util.inspect(value) } } : null);
  } catch (error) {
    await finish({ type: 'error', id: cell.id, ...describeError(error) });
  }
}

// SIGINT while a cell awaits: answer for it now and leave the promise behind. (A running script
// never gets here: breakOnSigint turns SIGINT into an exception inside it.) Idle: nothing to do.
process.on('SIGINT', () => {
  if (current && !current.finished && current.interrupt) current.interrupt();
});

// Errors from callbacks that outlive their cell are reported, not fatal (as in a notebook).
process.on('uncaughtException', (error) => {
  process.stderr.write(`Uncaught ${userStack(error)}\n`);
});
process.on('unhandledRejection', (reason) => {
  const text = reason instanceof Error ? userStack(reason) : util.inspect(reason);
  process.stderr.write(`Unhandled promise rejection: ${text}\n`);
});

// `require` resolves from the current working directory, which a cell may change.
function cwdRequire() {
  return Module.createRequire(path.join(process.cwd(), '<repl>'));
}
function userRequire(id) {
  return cwdRequire()(id);
}
userRequire.resolve = (id, options) => cwdRequire().resolve(id, options);
userRequire.cache = require.cache;
const replModule = new Module('<repl>');
replModule.paths = Module._nodeModulePaths(process.cwd());
for (const [name, value] of [['require', userRequire], ['module', replModule],
                             ['exports', replModule.exports]]) {
  Object.defineProperty(globalThis, name, { value, writable: true, configurable: true });
}

if (language === 'typescript' && !loadTypeScript()) {
  reply({ type: 'fatal', message: 'TypeScript is not installed in this sandbox' });
  process.exit(1);
}

const requests = new net.Socket({ fd: REQUESTS_FD, readable: true, writable: false });
let pending = '';
requests.setEncoding('utf8');
requests.on('data', (chunk) => {
  pending += chunk;
  let newline;
  while ((newline = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, newline);
    pending = pending.slice(newline + 1);
    if (!line.trim()) continue;
    let request;
    try {
      request = JSON.parse(line);
    } catch (error) {
      reply({ type: 'fatal', message: `bad request: ${error.message}` });
      continue;
    }
    runCell(request);
  }
});
// The agent closed its end: it is shutting this kernel down.
requests.on('end', () => process.exit(0));
requests.on('error', () => process.exit(0));

reply({ type: 'ready' });
