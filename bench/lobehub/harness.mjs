// Drives LobeHub's own AgentRuntime + GeneralChatAgent (bundled from the published
// @lobehub/lobehub package by run.sh) through rein's reference loop: user input, 10 rounds of
// [model asks for one calculator call -> tool returns "42"], final text, finish. The model and
// tool executors are in-memory and do the same work as rein's bench ports. Prints the same
// figures as `cargo bench -p rein-core --bench engine_loop`.
import { AgentRuntime, GeneralChatAgent } from './lobehub-runtime.mjs';

const ROUNDS = 10;
const OPERATIONS = 1000;

const manifest = {
  identifier: 'calculator',
  api: [{ name: 'evaluate', description: '', parameters: { type: 'object', properties: {} } }],
  meta: { title: 'calculator' },
  type: 'builtin',
};

let nextId = 0;
const id = () => `m${++nextId}`;

const executors = {
  call_llm: async (instruction, state) => {
    const s = structuredClone(state);
    s.status = 'running';
    const events = [{ type: 'llm_start', payload: instruction.payload }];
    const done = s.messages.filter((m) => m.role === 'tool').length;
    const assistantId = id();
    let content = '';
    let toolsCalling = [];
    if (done < ROUNDS) {
      const args = JSON.stringify({ expression: `6*7+${done}` });
      toolsCalling = [{ apiName: 'evaluate', arguments: args, id: `call_${done}`, identifier: 'calculator', type: 'builtin' }];
      events.push({ type: 'llm_stream', chunk: { tool_calls: toolsCalling } });
    } else {
      content = 'The answer is 42.';
      events.push({ type: 'llm_stream', chunk: { content } });
    }
    s.messages.push({ id: assistantId, role: 'assistant', content, tools: toolsCalling });
    s.usage.llm.apiCalls += 1;
    s.usage.llm.tokens.input += 200;
    s.usage.llm.tokens.output += 20;
    s.usage.llm.tokens.total += 220;
    s.cost.total += 0.00005;
    events.push({ type: 'llm_result', result: { content, tool_calls: toolsCalling } });
    return {
      events,
      newState: s,
      nextContext: {
        phase: 'llm_result',
        payload: { hasToolsCalling: toolsCalling.length > 0, toolsCalling, parentMessageId: assistantId, result: { content, tool_calls: toolsCalling } },
        session: { sessionId: s.operationId, status: s.status, stepCount: s.stepCount, messageCount: s.messages.length },
      },
    };
  },
  call_tool: async (instruction, state) => {
    const s = structuredClone(state);
    const call = instruction.payload.toolCalling;
    JSON.parse(call.arguments);
    const toolMessageId = id();
    s.messages.push({ id: toolMessageId, role: 'tool', content: '42', tool_call_id: call.id, parentId: instruction.payload.parentMessageId, plugin: call });
    s.usage.tools.totalCalls += 1;
    return {
      events: [{ type: 'tool_result', id: call.id, result: '42' }],
      newState: s,
      nextContext: {
        phase: 'tool_result',
        payload: { data: '42', executionTime: 0, isSuccess: true, parentMessageId: toolMessageId, toolCall: call, toolCallId: call.id },
        session: { sessionId: s.operationId, status: s.status, stepCount: s.stepCount, messageCount: s.messages.length },
      },
    };
  },
};

const agent = new GeneralChatAgent({ operationId: 'bench', agentConfig: { maxSteps: 100 }, modelRuntimeConfig: { model: 'loop', provider: 'bench' } });
const runtime = new AgentRuntime(agent, { executors });

function initial() {
  const s = AgentRuntime.createInitialState({
    operationId: 'bench',
    messages: [{ id: id(), role: 'user', content: 'Compute 6*7 ten times.' }],
    maxSteps: 100,
    toolManifestMap: { calculator: manifest },
    userInterventionConfig: { approvalMode: 'auto-run' },
  });
  return s;
}

async function operation() {
  let state = initial();
  let context;
  let steps = 0;
  for (;;) {
    const r = await runtime.step(state, context);
    steps += 1;
    state = r.newState;
    context = r.nextContext;
    if (!context || state.status === 'done' || state.status === 'error') break;
  }
  if (state.status !== 'done') throw new Error(`operation ended ${state.status}: ${JSON.stringify(state.error)}`);
  return steps;
}

for (let i = 0; i < 50; i++) await operation();
const start = process.hrtime.bigint();
let steps = 0;
for (let i = 0; i < OPERATIONS; i++) steps += await operation();
const us = Number(process.hrtime.bigint() - start) / 1000;
console.log(`LobeHub reference loop: ${OPERATIONS} operations, ${ROUNDS} rounds each, ${steps / OPERATIONS} steps each`);
console.log(`  ${(us / OPERATIONS).toFixed(2).padStart(10)} µs per operation`);
console.log(`  ${(us / (OPERATIONS * ROUNDS)).toFixed(2).padStart(10)} µs per round`);
console.log(`  ${(us / steps).toFixed(2).padStart(10)} µs per step`);
