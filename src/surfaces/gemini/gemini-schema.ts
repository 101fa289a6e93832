import { choicesSchema, dimensionsSchema, tokenCountSchema } from '../../providers/request-bounds.js';

/**
 * JSON Schemas of the Gemini API's request bodies, compiled once each (Ajv). A route's schema checks only what the
 * gateway reads on every path: the shape of `contents` and `systemInstruction` (the context-window check and the
 * estimate count them). The model is the URL's. Everything else is Gemini's to judge when the request is forwarded
 * to it (thought signatures, safety settings, a part kind or field newer than this file); a request translated for
 * another provider is checked against the translation's schema too (request-to-chat.ts).
 */
const part = { type: 'object' } as const;

const content = {
  type: 'object',
  required: ['parts'],
  properties: { role: { type: 'string', minLength: 1, maxLength: 32 }, parts: { type: 'array', items: part } },
} as const;

/** `POST .../models/{model}:generateContent` and `:streamGenerateContent`. */
export const geminiGenerateBodySchema = {
  type: 'object',
  required: ['contents'],
  properties: {
    contents: { type: 'array', minItems: 1, items: content },
    systemInstruction: content,
    tools: { type: 'array', items: { type: 'object' } },
    toolConfig: { type: 'object' },
    // Only what the estimate reads, bounded (providers/request-bounds.ts); the rest is Gemini's to judge.
    generationConfig: {
      type: 'object',
      properties: { maxOutputTokens: tokenCountSchema, candidateCount: choicesSchema },
    },
  },
} as const;

/** `POST .../models/{model}:countTokens`: `contents`, or a whole `generateContentRequest` (not both: the surface says so). */
export const geminiCountTokensBodySchema = {
  type: 'object',
  properties: {
    contents: { type: 'array', items: content },
    generateContentRequest: {
      ...geminiGenerateBodySchema,
      properties: { ...geminiGenerateBodySchema.properties, model: { type: 'string', maxLength: 256 } },
    },
  },
} as const;

const embedRequest = {
  type: 'object',
  required: ['content'],
  properties: {
    model: { type: 'string', maxLength: 256 },
    content: {
      ...content,
      properties: {
        ...content.properties,
        parts: { type: 'array', minItems: 1, items: { type: 'object', properties: { text: { type: 'string' } } } },
      },
    },
    taskType: { type: 'string', maxLength: 64 },
    title: { type: 'string' },
    outputDimensionality: dimensionsSchema,
  },
} as const;

/** `POST .../models/{model}:embedContent`. */
export const geminiEmbedContentBodySchema = embedRequest;

/** `POST .../models/{model}:batchEmbedContents`. */
export const geminiBatchEmbedBodySchema = {
  type: 'object',
  required: ['requests'],
  properties: { requests: { type: 'array', minItems: 1, maxItems: 2048, items: embedRequest } },
} as const;

const text = { type: 'string' } as const;
const id = { type: 'string', minLength: 1, maxLength: 256 } as const;
const name = { type: 'string', minLength: 1, maxLength: 128 } as const;
const number = { type: 'number' } as const;

const translatedPart = {
  type: 'object',
  properties: {
    text,
    thought: { type: 'boolean' },
    thoughtSignature: text,
    inlineData: {
      type: 'object',
      required: ['mimeType', 'data'],
      properties: { mimeType: { type: 'string', maxLength: 256 }, data: text },
    },
    fileData: {
      type: 'object',
      required: ['fileUri'],
      properties: { mimeType: { type: 'string', maxLength: 256 }, fileUri: text },
    },
    functionCall: { type: 'object', required: ['name'], properties: { id, name, args: { type: 'object' } } },
    functionResponse: {
      type: 'object',
      required: ['name'],
      properties: { id, name, response: { type: 'object' }, parts: { type: 'array' } },
    },
  },
} as const;

const translatedContent = {
  ...content,
  properties: { ...content.properties, parts: { type: 'array', items: translatedPart } },
} as const;

/**
 * What the translation reads, by type: checked only when the request goes to a non-Gemini upstream (or is counted
 * by the gateway). A value of the right type that the translation cannot honour is its own 400, naming it.
 */
export const translatedGeminiSchema = {
  type: 'object',
  required: ['contents'],
  properties: {
    contents: { type: 'array', items: translatedContent },
    systemInstruction: translatedContent,
    tools: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          functionDeclarations: {
            type: 'array',
            items: {
              type: 'object',
              required: ['name'],
              properties: {
                name,
                description: text,
                parameters: { type: 'object' },
                parametersJsonSchema: { type: ['object', 'boolean'] },
              },
            },
          },
        },
      },
    },
    toolConfig: {
      type: 'object',
      properties: {
        functionCallingConfig: {
          type: 'object',
          properties: {
            mode: { type: 'string', maxLength: 32 },
            allowedFunctionNames: { type: 'array', maxItems: 512, items: name },
          },
        },
      },
    },
    generationConfig: {
      type: 'object',
      properties: {
        temperature: number,
        topP: number,
        topK: number,
        candidateCount: choicesSchema,
        maxOutputTokens: tokenCountSchema,
        stopSequences: { type: 'array', maxItems: 64, items: text },
        presencePenalty: number,
        frequencyPenalty: number,
        seed: { type: 'integer' },
        responseMimeType: { type: 'string', maxLength: 128 },
        responseSchema: { type: 'object' },
        responseJsonSchema: { type: ['object', 'boolean'] },
        responseModalities: { type: 'array', maxItems: 8, items: { type: 'string', maxLength: 32 } },
        thinkingConfig: {
          type: 'object',
          properties: {
            includeThoughts: { type: 'boolean' },
            thinkingBudget: { type: 'integer' },
            thinkingLevel: { type: 'string', maxLength: 32 },
          },
        },
      },
    },
  },
} as const;
