"""World state on generated stories: does the world the product derives match the timeline?"""
